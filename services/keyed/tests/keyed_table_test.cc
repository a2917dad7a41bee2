// KeyTable, the keyed locks' per-key state table, against std::map: random inserts, finds and
// erases over short and long keys, with hashes forced to collide (tag, home slot, whole hash), in
// phases that grow the table and then empty it. Every invariant is checked after every step, and
// storage must return to its minimum once every key is gone (idle keys cost no memory).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "lockstep/random.h"
#include "services/keyed/adapter/key_table.h"

namespace lockstep::keyed {
namespace {

struct Counter {
  int value = 0;
};

enum class Collisions { none, same_tag, same_hash };

// A hash that is a function of the key (the table's contract) but collides as asked.
size_t hash_for(const std::string& key, Collisions collisions) {
  const size_t h = key_hash(key);
  switch (collisions) {
    case Collisions::none: return h;
    case Collisions::same_tag:
      return (h & ~size_t{0xFFFFFFFF}) | 7;    // one home slot, different hashes
    case Collisions::same_hash: return h % 3;  // whole hashes collide
  }
  return h;
}

std::string key_of(Prng& rng, uint64_t universe) {
  const uint64_t n = rng.below(universe);
  // A third of the keys are too long for the string's inline buffer.
  return n % 3 == 0 ? "long-key-" + std::string(40, 'x') + std::to_string(n)
                    : "k" + std::to_string(n);
}

void run_against_map(uint64_t seed, Collisions collisions, uint64_t universe) {
  Prng rng(seed);
  KeyTable<Counter> table;
  std::map<std::string, int> model;
  for (int phase = 0; phase < 4; ++phase) {
    const bool growing = phase % 2 == 0;
    for (int step = 0; step < 600; ++step) {
      const std::string key = key_of(rng, universe);
      const KeyRef ref(key, hash_for(key, collisions));
      const size_t pos = table.find(ref);
      auto it = model.find(key);
      REQUIRE((pos == KeyTable<Counter>::npos) == (it == model.end()));
      const bool insert = growing ? rng.chance(3, 4) : rng.chance(1, 4);
      if (pos == KeyTable<Counter>::npos) {
        if (!insert) continue;
        const size_t at = table.insert(ref);
        REQUIRE(table.at(at).key == key);
        REQUIRE(table.at(at).state.value == 0);  // a fresh state
        table.at(at).state.value = static_cast<int>(rng.below(1000)) + 1;
        model[key] = table.at(at).state.value;
      } else {
        REQUIRE(table.at(pos).state.value == it->second);  // the state survived moves and regrowth
        if (insert) continue;
        table.erase(pos);
        model.erase(it);
      }
      table.check();
      REQUIRE(table.size() == model.size());
    }
    if (!growing) {
      // Empty it completely: storage must return to its minimum.
      while (!model.empty()) {
        const std::string key = model.begin()->first;
        const size_t pos = table.find(KeyRef(key, hash_for(key, collisions)));
        REQUIRE(pos != KeyTable<Counter>::npos);
        table.erase(pos);
        model.erase(model.begin());
        table.check();
      }
      CHECK(table.empty());
      CHECK(table.slot_count() <= KeyTable<Counter>::kSlotsMin);
      CHECK(table.entry_capacity() <= KeyTable<Counter>::kEntriesMin);
    }
  }
}

}  // namespace

TEST_CASE("KeyTable agrees with std::map and gives its memory back when every key is gone",
          "[keyed][table]") {
  const auto each_seed = [](Collisions collisions, uint64_t universe) {
    for (uint64_t seed : {1, 2, 3}) {
      INFO("seed " << seed);
      run_against_map(seed, collisions, universe);
    }
  };
  SECTION("distinct hashes, many keys") { each_seed(Collisions::none, 5000); }
  SECTION("one home slot for every key") { each_seed(Collisions::same_tag, 300); }
  SECTION("whole-hash collisions") { each_seed(Collisions::same_hash, 300); }
}

}  // namespace lockstep::keyed
