// shared-client: one client holds a lock that is renewed in the background while another of its
// fibers takes and releases a second key that B wants too, all over the client's one connection.
// The renewals and the second fiber's calls must take turns (a Locker's CallGate): a connection
// is one byte stream, and two callers reading it at once may each take the other's reply. The
// original bug: the Locker's auto-extension thread shared the hiredis context with its owner, and
// an acquire read an extension's `1` as a grant with token 1 ("unexpected reply (integer) 151").
#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

namespace {

constexpr int64_t kWorkStepMs = 5;  // A's holder asks lost() before each write, this often

// One turn of the second key's contenders: take it (or, refused, let the turn go), work, give it
// back.
std::vector<SpecStep> turn_on_other(int64_t ttl_ms, int64_t work_ms) {
  SpecStep take =
      acquire_step(ttl_ms, RetrySettings{.retry_delay_ms = 3, .retry_times = 30}, "other");
  take.end_if_refused = false;
  return {take, step(StepKind::increment, work_ms), step(StepKind::release)};
}

}  // namespace

Scenario shared_client_scenario() {
  return {
      .name = "shared-client",
      .description =
          "A holds `held` four times, auto-extended every third of its TTL, and works; meanwhile "
          "a second fiber of A and client B take turns on `other` over and over: A's extensions "
          "and its second fiber's calls share A's one connection and must not read each other's "
          "replies",
      .options = {int_option("ttl_ms", 300, "lock TTL", 20, kHalfLeaseMaxMs),
                  int_option("holds", 4, "how many times A takes `held`", 1, 100),
                  int_option("work_ms", 600, "how long A holds `held` each time"),
                  int_option("rounds", 200, "turns each contender takes on `other`", 1, 10'000),
                  int_option("hold_ms", 4, "work inside `other` per turn")},
      .fits =
          [](const AdapterTraits& lock) {
            return is_networked_lease(lock) && expires(lock) && lock.extends &&
                   lock.concurrent_calls;
          },
      .fits_text =
          "a lease lock that expires, with an extend call, whose servers are across a network "
          "and whose client may run calls on two keys at once",
      .worlds = {WorldKind::sim},
      .expected =
          [](const AdapterTraits& lock, const Options&, bool fencing_on) {
            // Replies read by the wrong caller: an acquire takes another call's integer for its
            // token, and one that was refused reads another call's success, so its holder works
            // beside the key's real one.
            if (lock.calls_take_turns) return Expectation{};
            Expectation e = overlap_expectation(lock, fencing_on);
            if (lock.tokens != TokenKind::none) e.insert(Invariant::fencing);
            return e;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int rounds = static_cast<int>(o.get_int("rounds"));
            const std::vector<SpecStep> turn = turn_on_other(ttl_ms, o.get_int("hold_ms"));
            ScenarioSpec spec;
            spec.needs_sim = "a background renewal on a fiber of A's node beside A's other calls";
            const int a = spec.add_client("a");
            spec.start(a, 0,
                       {acquire_step(ttl_ms, std::nullopt, "held"),
                        step(StepKind::auto_extend, 0),
                        {.kind = StepKind::work_until_lost,
                         .ms = o.get_int("work_ms"),
                         .step_ms = kWorkStepMs},
                        step(StepKind::release)},
                       0, static_cast<int>(o.get_int("holds")));
            spec.start(a, 1, turn, 0, rounds);
            spec.start(spec.add_client("b"), 1, turn, 0, rounds);
            return spec;
          },
  };
}

}  // namespace lockstep
