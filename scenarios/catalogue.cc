// The named scenarios of docs/DESIGN.md. Each is a spec (harness/scenario_spec.h): a timeline in
// true milliseconds, with its numbers taken from options so `--set` can move them, and the
// expectation per adapter that `matrix` judges.
#include <fmt/format.h>

#include "base/check.h"
#include "harness/scenario.h"
#include "scenarios/catalogue.h"
#include "scenarios/keyed_scenarios.h"
#include "scenarios/premises.h"

namespace lockstep {

namespace {

Scenario sequential() {
  return {
      .name = "sequential",
      .description = "two clients take the same key one after the other: both succeed, no overlap",
      .options = {int_option("ttl_ms", 1000, "lock TTL", 1),
                  int_option("hold_ms", 100, "work inside the lock"), retry_delay_option(50),
                  retry_times_option(20)},
      .fits = is_lease,
      .fits_text = "a lease lock",
      .expected = [](const AdapterTraits&, const Options&, bool) { return Expectation{}; },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t hold_ms = o.get_int("hold_ms");
            const std::vector<SpecStep> steps =
                take_work_release_steps(o.get_int("ttl_ms"), hold_ms, retry_from(o));
            ScenarioSpec spec;
            spec.start(spec.add_client("a"), 0, steps, kStartJitterUs);
            spec.start(spec.add_client("b"), 2 * hold_ms + 10, steps, kStartJitterUs);
            spec.liveness_bound_us = (hold_ms + 2 * o.get_int("retry_delay_ms")) * 1000;
            return spec;
          },
  };
}

Scenario concurrent_race() {
  return {
      .name = "concurrent-race",
      .description =
          "two clients ask for the same free key in the same instant: exactly one wins, the other "
          "gets contention, not an error",
      .options = {int_option("ttl_ms", 1000, "lock TTL", 1),
                  int_option("hold_ms", 100, "work inside the lock")},
      .fits = is_lease,
      .fits_text = "a lease lock",
      .expected =
          [](const AdapterTraits& lock, const Options&, bool fencing_on) {
            if (lock.exclusive_grant) return Expectation{};
            // Without a unique index both upserts insert a lock document: both hold. Tokens still
            // increase, so fencing refuses the stale write; without tokens nothing refuses it.
            Expectation e{Invariant::mutual_exclusion, Invariant::lease_exclusion};
            if (!fencing_on || lock.tokens != TokenKind::monotonic) {
              e.insert(Invariant::no_lost_update);
            }
            // Both hold one key: a release that checks no owner, whichever comes to end the lock,
            // ends the other's lease with its own (a session shared by both).
            if (lock.release == OwnerCheck::none) e.insert(Invariant::ownership);
            return e;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const std::vector<SpecStep> steps =
                take_work_release_steps(o.get_int("ttl_ms"), o.get_int("hold_ms"), std::nullopt);
            ScenarioSpec spec;
            spec.start(spec.add_client("a"), 0, steps, kStartJitterUs);
            spec.start(spec.add_client("b"), 0, steps, kStartJitterUs);
            return spec;
          },
  };
}

// Kills A while its acquire is on the wire, at a fixed latency. A lock that writes its key and
// gives it a TTL in two calls (as it declares) dies with its first write's reply on the wire,
// between the two. Any other dies once a server has granted its lease, with the grant's reply
// halfway back: whatever it sends first (a script load, a handshake), the dead holder has a lease.
// One that never grants A's lease leaves the premise unmet.
SpecFault kill_with_acquire_on_the_wire(const AdapterEntry& adapter, const Options& options, int a,
                                        int64_t latency_us) {
  if (!effective_traits(adapter, options).expiry_with_grant) {
    return {.action = SpecAction::kill_client,
            .at_us = 3 * latency_us / 2,
            .client = a,
            .what = "crash a during its acquire"};
  }
  return {.action = SpecAction::kill_client,
          .at_us = latency_us / 2,
          .after_grant_of = a,
          .client = a,
          .what = "crash a with its grant's reply on the wire"};
}

Scenario crash_holder() {
  return {
      .name = "crash-holder",
      .description =
          "the holder dies without releasing: the TTL is the safety net, another client acquires "
          "after expiry (liveness); crash_at=in-acquire kills it while its acquire is on the wire",
      .options = {int_option("ttl_ms", 1500, "lock TTL", 1),
                  int_option("hold_ms", 100, "work before the crash"),
                  retry_delay_option(200),
                  retry_times_option(20),
                  {.name = "crash_at",
                   .default_value = "after-work",
                   .help = "when the holder dies",
                   .choices = {"after-work", "in-acquire"}}},
      .fits = is_lease,
      .fits_text = "a lease lock",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool) {
            // A lock set without expiry (SETNX, then PEXPIRE in a second call) outlives its dead
            // owner.
            if (!lock.expiry_with_grant && options.get("crash_at") == "in-acquire") {
              return Expectation{Invariant::liveness};
            }
            return Expectation{};
          },
      .spec =
          [](const Options& o, const AdapterEntry& adapter, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int64_t hold_ms = o.get_int("hold_ms");
            ScenarioSpec spec;
            const int a = spec.add_client("a");
            if (o.get("crash_at") == "in-acquire") {
              // Fixed latency makes "on the wire" a known instant: the request lands at 0.5 ms, its
              // reply would be back at 1 ms; A dies in between.
              constexpr int64_t kLatency_us = 500;
              spec.needs_sim = "killing a client while its request is on the wire";
              spec.fixed_latency_us = kLatency_us;
              spec.start(a, 0, {acquire_step(ttl_ms), step(StepKind::increment, hold_ms)})
                  .leave_when_killed = true;
              spec.strike(kill_with_acquire_on_the_wire(adapter, o, a, kLatency_us));
            } else {
              spec.start(
                  a, 0,
                  {acquire_step(ttl_ms), step(StepKind::increment, hold_ms), step(StepKind::crash)},
                  kStartJitterUs);
            }
            spec.start(spec.add_client("b"), 2 * hold_ms,
                       take_work_release_steps(ttl_ms, hold_ms, retry_from(o)), kStartJitterUs);
            spec.liveness_bound_us = (ttl_ms + 2 * o.get_int("retry_delay_ms")) * 1000;
            return spec;
          },
  };
}

// crash-holder with the holder killed while its acquire is on the wire (sim only): a lock that
// sets its key and gives it a TTL in two calls leaves it without one, for good.
Scenario crash_in_acquire() {
  Scenario s = crash_holder();
  s.name = "crash-in-acquire";
  s.description =
      "crash-holder, the holder killed while its acquire is on the wire: a grant and its TTL must "
      "be one step, or the key outlives its dead owner (liveness)";
  for (OptionSpec& option : s.options) {
    if (option.name == "crash_at") option.default_value = "in-acquire";
  }
  s.worlds = {WorldKind::sim};
  s.fits = is_networked_lease;  // "on the wire" needs one
  s.fits_text = "a lease lock whose servers are across a network";
  return s;
}

Scenario stolen_lock() {
  return {
      .name = "stolen-lock",
      .description =
          "A holds (TTL 500) and pauses 800; B acquires after expiry; A releases, then extends: "
          "both fail "
          "and leave B's lock intact (ownership); a third client C finds B's lock still there",
      .options = {int_option("ttl_ms", 500, "lock TTL", 1, kHalfLeaseMaxMs),
                  int_option("pause_ms", 800, "A's stop-the-world pause"),
                  int_option("hold_ms", 1000, "B's work inside the lock", 0, kWorkInLeaseMaxMs),
                  retry_delay_option(50), retry_times_option(20)},
      .fits = is_lease,
      .fits_text = "a lease lock",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool fencing_on) {
            Expectation e;
            // A's pause outlasts its lease while A still believes it holds: exclusion is lost.
            // (A lease that lasts with its session stays A's through a pause: B waits for it.)
            if (options.get_int("pause_ms") > options.get_int("ttl_ms") && expires(lock))
              e.insert(Invariant::mutual_exclusion);
            if (lock.extend == OwnerCheck::none) {
              // A's extend lengthens B's lock, and reports success for A's own lease, long gone.
              e.insert(Invariant::ownership);
              e.insert(Invariant::valid_on_return);
            }
            // A check-then-delete release compares first: only a pause between its two calls
            // exposes it (pause-in-release).
            if (lock.release == OwnerCheck::none) {
              // A's release deletes B's lock, so C gets in while B works: C's write is then
              // overwritten by B's, unless fencing refuses B's stale write.
              e.insert(Invariant::ownership);
              if (!fencing_on) e.insert(Invariant::no_lost_update);
            }
            return e;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int64_t pause_ms = o.get_int("pause_ms");
            const int64_t hold_ms = o.get_int("hold_ms");
            ScenarioSpec spec;
            spec.start(spec.add_client("a"), 0,
                       {acquire_step(ttl_ms), step(StepKind::pause, pause_ms),
                        step(StepKind::release), extend_step(ttl_ms)},
                       kStartJitterUs);
            spec.start(
                spec.add_client("b"), ttl_ms + 100,
                take_work_release_steps(ttl_ms + hold_ms + kLeaseSlackMs, hold_ms, retry_from(o)),
                kStartJitterUs);
            // C arrives after A's release while B still works: it must find the key taken.
            spec.start(spec.add_client("c"), pause_ms + 100,
                       take_work_release_steps(ttl_ms, 0, std::nullopt), kStartJitterUs);
            return spec;
          },
  };
}

Scenario extend_after_expiry() {
  return {
      .name = "extend-after-expiry",
      .description =
          "A's lock expires, B takes it and releases, A extends: the extend fails and must not "
          "bring "
          "A's lock back (B gets the key again at once)",
      .options = {int_option("ttl_ms", 500, "lock TTL", 1),
                  int_option("hold_ms", 50, "B's work inside the lock"), retry_delay_option(20),
                  retry_times_option(50)},
      .fits = [](const AdapterTraits& lock) { return expires(lock) && lock.extends; },
      .fits_text = "a lease lock that expires, with an extend call",
      .expected =
          [](const AdapterTraits& lock, const Options&, bool) {
            // An extend reported done though the server refused it: A's extend returns with a
            // validity no lease backs.
            if (lock.validity == ValidityRule::extends_even_when_refused) {
              return Expectation{Invariant::valid_on_return};
            }
            return Expectation{};
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int64_t hold_ms = o.get_int("hold_ms");
            ScenarioSpec spec;
            // A works until its validity ends by its own clock, and knows it; later it extends.
            spec.start(spec.add_client("a"), 0,
                       {acquire_step(ttl_ms),
                        {.kind = StepKind::sleep_out_validity, .ttl_ms = ttl_ms},
                        step(StepKind::sleep, 2 * hold_ms + 100),
                        extend_step(ttl_ms),
                        step(StepKind::is_locked)},
                       kStartJitterUs);
            std::vector<SpecStep> b = take_work_release_steps(ttl_ms, hold_ms, retry_from(o));
            b.push_back(step(StepKind::sleep, hold_ms + 200));  // past A's extend
            spec.start(spec.add_client("b"), ttl_ms + 10,
                       joined(b, take_work_release_steps(ttl_ms, hold_ms, retry_from(o))),
                       kStartJitterUs);
            // B's second acquire must not wait: a resurrected lock would make it wait out a TTL.
            spec.liveness_bound_us = (ttl_ms / 2) * 1000;
            return spec;
          },
  };
}

Scenario gc_pause() {
  return {
      .name = "gc-pause",
      .description =
          "A acquires (TTL 10000), reads, pauses 15000; B acquires, reads and writes; A wakes and "
          "writes: every lease lock loses mutual_exclusion; with fencing on the resource refuses "
          "A's "
          "stale write and no update is lost",
      .options = {int_option("ttl_ms", 10000, "lock TTL", 1),
                  int_option("pause_ms", 15000, "A's GC pause"),
                  int_option("hold_ms", 100, "B's work inside the lock"), retry_delay_option(100),
                  retry_times_option(100)},
      .fits = is_lease,
      .fits_text = "a lease lock",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool fencing_on) {
            Expectation e;
            if (options.get_int("pause_ms") <= options.get_int("ttl_ms")) return e;
            // A lease that lasts with its session stays A's through the pause: B waits for it.
            if (!expires(lock)) return e;
            e.merge(overlap_expectation(lock, fencing_on));
            return e;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            ScenarioSpec spec;
            spec.start(spec.add_client("a"), 0,
                       {acquire_step(ttl_ms), step(StepKind::read),
                        step(StepKind::pause, o.get_int("pause_ms")), step(StepKind::write_next),
                        step(StepKind::release)},
                       kStartJitterUs);
            spec.start(spec.add_client("b"), ttl_ms + 500,
                       take_work_release_steps(ttl_ms, o.get_int("hold_ms"), retry_from(o)),
                       kStartJitterUs);
            return spec;
          },
  };
}

namespace {

using premises::acquired_during;
using premises::contended;
using premises::entered;
using premises::fault_while_inside;
using premises::fault_while_pending;
using premises::granted_before_killed;
using premises::invoked_after_other_entered;
using premises::killed_while_inside;
using premises::killed_while_pending;

// A died with its acquire pending after a server acted on it: it had granted A a lease, or A's
// key never became free for B (a key written without its TTL).
bool died_acquiring_leaving_key(const History& h) {
  return killed_while_pending(h, 0, Op::acquire) && (granted_before_killed(h, 0) || !entered(h, 1));
}

struct StatedPremise {
  std::string_view scenario;
  std::string_view text;
  bool (*held)(const History& history, const Options& options);
};

// Every scenario's premise: the moment it is about, as its history must show it (A is client 0).
constexpr StatedPremise kPremises[] = {
    {"sequential", "both clients get the key, one after the other",
     [](const History& h, const Options&) { return entered(h, 0) && entered(h, 1); }},
    {"concurrent-race", "the clients ask for the free key while the other is still asking",
     [](const History& h, const Options&) { return contended(h); }},
    {"crash-holder",
     "A dies holding the lock (or, crash_at=in-acquire, with its acquire on the wire after a "
     "server granted its lease)",
     [](const History& h, const Options& o) {
       return o.get("crash_at") == "in-acquire" ? died_acquiring_leaving_key(h)
                                                : killed_while_inside(h, 0);
     }},
    {"crash-in-acquire",
     "A dies with its acquire on the wire, after a server granted its lease (or left its key "
     "taken for good)",
     [](const History& h, const Options&) { return died_acquiring_leaving_key(h); }},
    {"stolen-lock", "A is paused while it holds, and B gets the key",
     [](const History& h, const Options&) {
       return fault_while_inside(h, 0, FaultKind::pause) && entered(h, 1);
     }},
    {"extend-after-expiry", "A asks to extend after B got the key",
     [](const History& h, const Options&) {
       return invoked_after_other_entered(h, 0, Op::extend);
     }},
    {"gc-pause", "A is paused while it believes it holds",
     [](const History& h, const Options&) { return fault_while_inside(h, 0, FaultKind::pause); }},
    {"slow-acquire", "A is paused with its acquire on the wire (its grant arrives late)",
     [](const History& h, const Options&) {
       return fault_while_pending(h, 0, FaultKind::pause, Op::acquire);
     }},
    {"slow-grant", "A is paused with its acquire on the wire (its grant arrives late)",
     [](const History& h, const Options&) {
       return fault_while_pending(h, 0, FaultKind::pause, Op::acquire);
     }},
    {"clock-drift", "the servers' clocks run fast while A holds",
     [](const History& h, const Options&) {
       return fault_while_inside(h, 0, FaultKind::server_drift);
     }},
    {"server-clock-jump", "the servers' wall clocks jump while A holds",
     [](const History& h, const Options&) {
       return fault_while_inside(h, 0, FaultKind::server_clock_jump);
     }},
    {"failover", "A holds when the primary dies",
     [](const History& h, const Options&) {
       return fault_while_inside(h, 0, FaultKind::failover);
     }},
    {"partition", "A holds when it is cut off from the servers",
     [](const History& h, const Options&) {
       return fault_while_inside(h, 0, FaultKind::partition);
     }},
    {"lost-extension", "A's extensions fail (it is cut off) while it holds and works on",
     [](const History& h, const Options&) {
       return fault_while_inside(h, 0, FaultKind::partition) && entered(h, 1);
     }},
    {"unanswered-renewal",
     "A's extensions go unanswered (it is cut off) while it holds and works on",
     [](const History& h, const Options&) {
       return fault_while_inside(h, 0, FaultKind::partition) && entered(h, 1);
     }},
    {"shared-client",
     "while A held `held`, the servers renewed its lease and A's second fiber was granted "
     "`other`",
     [](const History& h, const Options&) {
       bool inside = false;
       bool extended = false;
       bool granted_other = false;
       for (const HistoryEvent& e : h.events()) {
         if (e.client != 0) continue;
         if (e.kind == EventKind::cs_enter || e.kind == EventKind::cs_exit) {
           if (e.key == "held") inside = e.kind == EventKind::cs_enter;
         } else if (inside && (e.kind == EventKind::extend || e.kind == EventKind::grant) &&
                    e.key == "held") {
           extended = true;  // a renewal (some libraries renew by setting the key again)
         } else if (inside && e.kind == EventKind::complete && e.op == Op::acquire &&
                    e.key == "other" && e.outcome == Outcome::ok) {
           granted_other = true;
         }
       }
       return extended && granted_other;
     }},
    {"lost-reply", "the servers removed A's lock, and A's release did not hear so",
     [](const History& h, const Options&) {
       bool revoked = false;
       for (const HistoryEvent& e : h.events()) {
         if (e.kind == EventKind::revoke && e.client == 0) revoked = true;
         if (revoked && e.kind == EventKind::complete && e.client == 0 && e.op == Op::release &&
             e.outcome != Outcome::ok)
           return true;
       }
       return false;
     }},
    {"pause-in-release", "A is paused with its release on the wire",
     [](const History& h, const Options&) {
       return fault_while_pending(h, 0, FaultKind::pause, Op::release);
     }},
    {"retry-storm", "the clients contend for the key",
     [](const History& h, const Options&) { return contended(h); }},
    {"writer-starvation", "the writer asks while readers hold",
     [](const History& h, const Options&) { return contended(h); }},
    {"fifo-queue", "callers queue behind a holder",
     [](const History& h, const Options&) { return contended(h); }},
    {"clock-jump", "a node's clock jumps while A holds a majority",
     [](const History& h, const Options&) {
       return fault_while_inside(h, 0, FaultKind::server_clock_jump);
     }},
    {"crash-restart", "a node that granted A's lock crashes while A holds",
     [](const History& h, const Options&) {
       return fault_while_inside(h, 0, FaultKind::server_crash);
     }},
    {"split-vote", "the clients ask for the key while each reaches only a minority",
     [](const History& h, const Options&) { return acquired_during(h, FaultKind::partition); }},
    {"node-pause", "A and B get the key while a node is stopped",
     [](const History& h, const Options&) {
       return acquired_during(h, FaultKind::server_pause) && entered(h, 0) && entered(h, 1);
     }},
    {"client-clock-ahead", "B, its clock ahead, asks while A holds",
     [](const History& h, const Options&) { return contended(h); }},
    {"session-killed", "A's session is ended while A holds, and B gets the key",
     [](const History& h, const Options&) {
       return fault_while_inside(h, 0, FaultKind::session_end) && entered(h, 1);
     }},
    {"connection-reset", "A's connections are reset while A holds, and B gets the key",
     [](const History& h, const Options&) {
       return fault_while_inside(h, 0, FaultKind::reset) && entered(h, 1);
     }},
};

// Gives each scenario its premise; a scenario without one is a catalogue bug.
std::vector<Scenario> with_premises(std::vector<Scenario> all) {
  for (Scenario& scenario : all) {
    for (const StatedPremise& p : kPremises) {
      if (p.scenario != scenario.name) continue;
      scenario.premise = std::string(p.text);
      scenario.premise_held = p.held;
    }
    LOCKSTEP_CHECK(scenario.premise_held != nullptr,
                   "every catalogue scenario states its premise: " + scenario.name);
  }
  return all;
}

}  // namespace

std::vector<Scenario> build_catalogue() {
  return with_premises({sequential(),
                        concurrent_race(),
                        crash_holder(),
                        crash_in_acquire(),
                        stolen_lock(),
                        extend_after_expiry(),
                        gc_pause(),
                        slow_acquire_scenario(),
                        slow_grant_scenario(),
                        clock_drift_scenario(),
                        server_clock_jump_scenario(),
                        failover_scenario(),
                        partition_scenario(),
                        pause_in_release_scenario(),
                        lost_extension_scenario(),
                        unanswered_renewal_scenario(),
                        lost_reply_scenario(),
                        shared_client_scenario(),
                        retry_storm_scenario(),
                        lease_expires_while_queued_scenario(),
                        writer_starvation_scenario(),
                        fifo_queue_scenario(),
                        clock_jump_scenario(),
                        crash_restart_scenario(),
                        split_vote_scenario(),
                        node_pause_scenario(),
                        client_clock_ahead_scenario(),
                        session_killed_scenario(),
                        connection_reset_scenario()});
}

}  // namespace

OptionSpec int_option(std::string name, int64_t default_value, std::string help, int64_t min,
                      int64_t max) {
  return {.name = std::move(name),
          .default_value = std::to_string(default_value),
          .help = std::move(help),
          .min = min,
          .max = max};
}

OptionSpec retry_delay_option(int64_t default_ms, std::string help) {
  return int_option("retry_delay_ms", default_ms, std::move(help), 1, kRetryDelayMaxMs);
}

OptionSpec retry_times_option(int64_t default_times, std::string help) {
  return int_option("retry_times", default_times, std::move(help), 0, kMaxRetryTimes);
}

RetrySettings retry_from(const Options& options) {
  return {.retry_delay_ms = options.get_int("retry_delay_ms"),
          .retry_times = static_cast<int>(options.get_int("retry_times"))};
}

ScenarioSpec holder_struck_spec(const Options& o, int64_t struck_at_ms, SpecAction strike,
                                FaultKind kind, std::string what) {
  const int64_t ttl_ms = o.get_int("ttl_ms");
  ScenarioSpec spec;
  const int a = spec.add_client("a");
  // A reads, works, writes: unaware of what struck it.
  spec.start(a, 0, take_work_release_steps(ttl_ms, o.get_int("hold_ms"), std::nullopt),
             kStartJitterUs);
  spec.strike({.action = strike,
               .at_us = struck_at_ms * 1000,
               .client = a,
               .tag = {.kind = kind, .client = a},
               .what = std::move(what)});
  spec.start(spec.add_client("b"), struck_at_ms + 50,
             take_work_release_steps(ttl_ms, o.get_int("b_hold_ms"), retry_from(o)),
             kStartJitterUs);
  return spec;
}

Expectation overlap_expectation(const AdapterTraits& lock, bool fencing_on) {
  Expectation e{Invariant::mutual_exclusion};
  if (!fencing_on || lock.tokens != TokenKind::monotonic) e.insert(Invariant::no_lost_update);
  return e;
}

bool is_lease(const AdapterTraits& lock) { return lock.family == LockFamily::lease; }
bool is_keyed_rw(const AdapterTraits& lock) { return lock.family == LockFamily::keyed_rw; }
bool is_keyed_fifo(const AdapterTraits& lock) { return lock.family == LockFamily::keyed_fifo; }
bool is_networked_lease(const AdapterTraits& lock) {
  return is_lease(lock) && lock.sim_faults.network;
}
bool has_drifting_servers(const AdapterTraits& lock) {
  return is_lease(lock) && lock.sim_faults.server_clock;
}
bool has_jumping_servers(const AdapterTraits& lock) {
  return is_lease(lock) && lock.sim_faults.server_clock_jump;
}
bool can_fail_over(const AdapterTraits& lock) { return is_lease(lock) && lock.sim_faults.failover; }
bool expires(const AdapterTraits& lock) {
  return is_lease(lock) && lock.server_expiry != ExpiryClock::none;
}
bool expires_by_server_clock(const AdapterTraits& lock) {
  return expires(lock) && lock.server_expiry != ExpiryClock::client_value;
}
bool lasts_with_session(const AdapterTraits& lock) {
  return is_lease(lock) && lock.server_expiry == ExpiryClock::none;
}
bool on_one_server(const AdapterTraits& lock) { return lock.servers == ServerLayout::one_server; }
bool on_independent_nodes(const AdapterTraits& lock) {
  return lock.servers == ServerLayout::independent_nodes;
}
bool on_a_replica_set(const AdapterTraits& lock) {
  return lock.servers == ServerLayout::replica_set;
}

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> catalogue = build_catalogue();
  return catalogue;
}

const Scenario* find_scenario(const std::string& name) {
  for (const Scenario& s : scenarios()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string scenario_names() {
  std::string out;
  for (const Scenario& s : scenarios()) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

}  // namespace lockstep
