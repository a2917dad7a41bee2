#include "services/keyed/known_bad/keyed_known_bad.h"

#include "harness/known_bad.h"
#include "services/keyed/backend/keyed_backend.h"
#include "services/keyed/known_bad/bad_fifo_clear_admits.h"
#include "services/keyed/known_bad/bad_rw_lost_wakeup.h"
#include "services/keyed/known_bad/bad_rw_reader_preference.h"
#include "services/service.h"

namespace lockstep {

std::vector<AdapterEntry> keyed_known_bad() {
  const AdapterEntry& keyed_rw = production_adapter("keyed-rw");
  const AdapterEntry& fifo = production_adapter("fifo");
  return {
      known_bad_entry({"bad-rw-reader-preference", "writer_preference",
                       // a reader must arrive while readers hold and a writer is queued.
                       0.08,
                       "known-bad: keyed-rw whose readers pass a queued writer (reader preference "
                       "starves writers)",
                       [](AdapterTraits& t) { t.writers_first = false; }},
                      keyed_rw,
                      [](BackendEnv& env) {
                        return make_keyed_rw_sim_backend(env,
                                                         std::make_unique<ReaderPreferenceRwCore>(),
                                                         "bad-rw-reader-preference");
                      }),
      known_bad_entry(
          {"bad-rw-lost-wakeup",
           "liveness",
           // a writer must be queued when a key's last holder releases: most seeds with contention.
           0.47,
           "known-bad: keyed-rw whose last release forgets to wake a queued writer "
           "(it stays parked for good)",
           [](AdapterTraits& t) { t.wakes_waiters = false; },
           {"writer-starvation"}},
          keyed_rw,
          [](BackendEnv& env) {
            return make_keyed_rw_sim_backend(env, std::make_unique<LostWakeupRwCore>(),
                                             "bad-rw-lost-wakeup");
          }),
      known_bad_entry(
          {"bad-fifo-clear-admits",
           "mutual_exclusion",
           // a clear() while a holder runs, and a caller after it before that holder is done.
           0.09,
           "known-bad: the FIFO keyed lock whose clear() drops the running holders, "
           "so a caller after it runs beside one",
           [](AdapterTraits& t) { t.clear_keeps_exclusion = false; },
           {"fifo-queue"}},
          fifo,
          [](BackendEnv& env) {
            return make_fifo_sim_backend(
                env,
                [](keyed::FifoLimits limits) {
                  return std::unique_ptr<keyed::FifoStateMachine>(
                      std::make_unique<ClearAdmitsFifoCore>(limits));
                },
                "bad-fifo-clear-admits");
          }),
  };
}

}  // namespace lockstep
