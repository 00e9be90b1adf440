// The simulator's event queue (issue 12): events run in time order and,
// at one instant, in the order they were scheduled, whatever the spread of
// times (the radix heap's buckets are bits of the time) and whether they were
// scheduled before the run or by events running at that very instant. Every
// simulated result depends on this order being exactly that.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "metaroce/sim/simulator.h"

namespace metaroce::sim {
namespace {

TEST(SimEventQueue, EventsRunInTimeThenScheduleOrder) {
  TwoHostFabric::PlaneConfig p;
  TwoHostFabric fabric({p}, 1);
  Simulator sim(fabric);
  std::mt19937_64 rng(42);
  struct Ran {
    Nanos at;
    uint64_t id;
  };
  std::vector<Ran> ran;
  uint64_t next_id = 0;
  // Times from the same nanosecond to 2^40 ns apart, many shared.
  auto random_time = [&](Nanos from) {
    const unsigned bits = static_cast<unsigned>(rng() % 41);
    return from + static_cast<Nanos>(rng() & ((1ull << bits) - 1));
  };
  std::function<void(uint64_t)> schedule;  // id order = schedule order
  schedule = [&](uint64_t depth) {
    const uint64_t id = next_id++;
    const Nanos at = random_time(sim.now());
    sim.at(at, [&, id, depth] {
      ran.push_back({sim.now(), id});
      // Some events schedule more: at this very instant (they run after every
      // event already due now), or later.
      if (depth < 3)
        for (uint64_t k = rng() % 3; k > 0; --k) {
          if (rng() % 2) {
            const uint64_t same = next_id++;
            sim.at(sim.now(), [&, same] { ran.push_back({sim.now(), same}); });
          } else {
            schedule(depth + 1);
          }
        }
    });
  };
  for (int i = 0; i < 20'000; ++i) schedule(0);
  // Run in steps, as a harness or a scenario does, and between them schedule
  // at the clock: before the next pending event, which looking for it must
  // not have made "the past".
  const Nanos end = Nanos{1} << 42;
  while (sim.now() < end) {
    sim.run_until(std::min(end, sim.now() + static_cast<Nanos>(rng() % (Nanos{1} << (rng() % 40)))));
    if (rng() % 4 == 0) schedule(3);
  }
  sim.run_until(end << 1);  // those scheduled in the last step
  ASSERT_EQ(ran.size(), next_id) << "every scheduled event ran once";
  for (size_t i = 1; i < ran.size(); ++i) {
    ASSERT_LE(ran[i - 1].at, ran[i].at) << "event " << i << " ran before an earlier one";
    if (ran[i - 1].at == ran[i].at) {
      ASSERT_LT(ran[i - 1].id, ran[i].id) << "at " << ran[i].at << " ns: not in the order scheduled";
    }
  }
}

}  // namespace
}  // namespace metaroce::sim
