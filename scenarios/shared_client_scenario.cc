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

// One of the second key's contenders: take it, work, give it back, `rounds` times.
void take_turns_on_other(Client& c, int64_t rounds, int64_t ttl_ms, int64_t work_ms) {
  const RetrySettings retry{.retry_delay_ms = 3, .retry_times = 30};
  for (int64_t round = 0; round < rounds; ++round) {
    std::optional<Lock> lock = c.acquire("other", ttl_ms, retry);
    if (!lock) continue;
    c.increment(*lock, work_ms);
    c.release(*lock);
  }
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
      .build =
          [](ScenarioEnv& env) {
            const int64_t ttl_ms = env.option("ttl_ms");
            const int64_t holds = env.option("holds");
            const int64_t work_ms = env.option("work_ms");
            const int64_t rounds = env.option("rounds");
            const int64_t hold_ms = env.option("hold_ms");
            env.require_sim("a background renewal on a fiber of A's node beside A's other calls");
            Client& a = env.add_client("a");
            env.start(a, 0, [holds, ttl_ms, work_ms](Client& c) {
              for (int64_t hold = 0; hold < holds; ++hold) {
                std::optional<Lock> lock = c.acquire("held", ttl_ms);
                if (!lock) return;
                c.auto_extend(*lock, 0);
                c.work_until_lost(*lock, work_ms, kWorkStepMs);
                c.release(*lock);
              }
            });
            env.start(a, 1, [rounds, ttl_ms, hold_ms](Client& c) {
              take_turns_on_other(c, rounds, ttl_ms, hold_ms);
            });
            env.start(env.add_client("b"), 1, [rounds, ttl_ms, hold_ms](Client& c) {
              take_turns_on_other(c, rounds, ttl_ms, hold_ms);
            });
          },
  };
}

}  // namespace lockstep
