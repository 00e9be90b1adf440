// ConnectionSchedule (which connections poll_tx asks, and the earliest
// deadline) against a brute-force model, and an endpoint holding many idle
// connections beside busy ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "harness.h"
#include "metaroce/transport/connection_schedule.h"

namespace {

using metaroce::transport::ConnectionSchedule;
using metaroce::transport::kNever;
using metaroce::transport::Nanos;

// The same decisions, computed the slow way: a flag and a deadline per slot.
struct Model {
  std::vector<bool> active;
  std::vector<Nanos> deadline;
  void resize(size_t n) {
    active.resize(n, true);
    deadline.resize(n, kNever);
  }
  Nanos earliest() const {
    Nanos d = kNever;
    for (Nanos x : deadline) d = std::min(d, x);
    return d;
  }
  size_t next_active(size_t from) const {
    const size_t n = active.size();
    for (size_t k = 0; k < n; ++k)
      if (active[(from + k) % n]) return (from + k) % n;
    return ConnectionSchedule::kNone;
  }
  size_t count() const { return static_cast<size_t>(std::count(active.begin(), active.end(), true)); }
};

TEST(ConnectionSchedule, AgreesWithABruteForceModel) {
  for (size_t n : {1u, 63u, 64u, 65u, 300u}) {
    std::mt19937_64 rng(42 + n);
    ConnectionSchedule s;
    Model m;
    s.resize(n);
    m.resize(n);
    Nanos now = 0;
    for (int step = 0; step < 100'000; ++step) {
      const size_t cur = s.size();
      const size_t slot = rng() % cur;
      switch (rng() % 7) {
        case 0: {  // a deadline ahead, behind or none, as connections report them
          const uint64_t r = rng() % 10;
          const Nanos d = r == 0 ? kNever : now + static_cast<Nanos>(rng() % 2000) - 200;
          s.set_deadline(slot, d);
          m.deadline[slot] = d;
          break;
        }
        case 1:
          s.deactivate(slot);
          m.active[slot] = false;
          break;
        case 2:
          s.activate(slot);
          m.active[slot] = true;
          break;
        case 3: {
          now += static_cast<Nanos>(rng() % 100);
          s.activate_due(now);
          for (size_t i = 0; i < cur; ++i)
            if (m.deadline[i] <= now) m.active[i] = true;
          break;
        }
        case 4: {
          const Nanos d = now + static_cast<Nanos>(rng() % 500);
          s.touched(slot, d);
          m.active[slot] = true;
          m.deadline[slot] = d;
          break;
        }
        case 5:  // a connection leaves (the last takes its slot), now and then one joins
          if (rng() % 8 == 0) {
            if (cur > 1) {
              s.swap_remove(slot);
              m.active[slot] = m.active[cur - 1];
              m.deadline[slot] = m.deadline[cur - 1];
              m.active.pop_back();
              m.deadline.pop_back();
            }
            if (rng() % 2 || cur == 1) {
              s.resize(s.size() + 1);
              m.resize(m.active.size() + 1);
            }
          }
          break;
        default: {
          const size_t from = rng() % cur;
          ASSERT_EQ(s.next_active(from), m.next_active(from)) << "n " << n << " step " << step;
        }
      }
      ASSERT_EQ(s.active(), m.count()) << "n " << n << " step " << step;
      ASSERT_EQ(s.earliest(), m.earliest()) << "n " << n << " step " << step;
      ASSERT_EQ(s.size(), m.active.size());
      ASSERT_LE(s.heap_entries(), 4 * n + 256) << "the heap never grows past its reserved room";
    }
  }
}

TEST(ConnectionSchedule, ShrinkingKeepsOnlyTheRemainingSlots) {
  ConnectionSchedule s;
  s.resize(130);
  for (size_t i = 0; i < 130; ++i) s.set_deadline(i, static_cast<Nanos>(1000 - i));
  s.deactivate(3);
  s.resize(100);
  EXPECT_EQ(s.active(), 99u);
  EXPECT_EQ(s.earliest(), 1000 - 99);  // slots 100..129 (the earliest ones) are gone
  EXPECT_EQ(s.next_active(3), 4u);
  EXPECT_EQ(s.next_active(100), 0u);   // past the end wraps around
}

// Deadlines that have passed move once out of the pending heap: a poll pays
// for the deadlines that passed since the last one, not again for every slot
// still due and waiting its turn (1,000 of them here).
TEST(ConnectionSchedule, APassedDeadlineIsTakenOnce) {
  ConnectionSchedule s;
  s.resize(1000);
  for (size_t i = 0; i < 1000; ++i) {
    s.set_deadline(i, 5);
    s.deactivate(i);
  }
  s.activate_due(10);
  EXPECT_EQ(s.active(), 1000u);
  EXPECT_EQ(s.earliest(), 5) << "still due: work is waiting";
  EXPECT_EQ(s.heap_entries(), 0u) << "nothing left pending for the next poll to walk";
  EXPECT_EQ(s.due_entries(), 1000u);
  s.activate_due(11);
  EXPECT_EQ(s.due_entries(), 1000u) << "the next poll moves nothing again";
  // Asked in turn: each records its next deadline, and the due ones leave.
  for (size_t i = 0; i < 999; ++i) s.set_deadline(i, 100 + static_cast<Nanos>(i));
  EXPECT_EQ(s.earliest(), 5) << "slot 999 is still due";
  s.set_deadline(999, 5);  // asked, and its deadline has not moved: pending again
  EXPECT_EQ(s.earliest(), 5);
  EXPECT_EQ(s.due_entries(), 0u);
  s.deactivate(999);
  s.activate_due(12);
  EXPECT_TRUE(s.is_active(999)) << "its passed deadline wakes it again";
  s.set_deadline(999, kNever);
  EXPECT_EQ(s.earliest(), 100);
}

// 2,000 idle connections beside a busy one: its WRITEs complete, verified
// (an idle connection, never posted to, has no timer and is not asked to send).
TEST(ConnectionSchedule, IdleConnectionsDoNotHoldUpABusyOne) {
  using namespace engine_test;
  Harness h(uniform_planes(4), 3);
  for (int i = 0; i < 2000; ++i) h.connect_metaroce(4, 1);
  EXPECT_EQ(h.ep(kA).next_deadline(), kNever) << "no connection has a timer before any post";
  const ConnPair busy = h.connect_metaroce(4, 1);
  Traffic t(h, busy, 1, 8);
  for (int i = 0; i < 32; ++i) t.add(metaroce::transport::Verb::kWrite, 0, 16 * 1024);
  t.start();
  ASSERT_TRUE(h.run_until([&] { return t.done(); }, 100 * kMs)) << t.completed() << "/" << t.total();
  t.check();
}

}  // namespace

namespace {

// RecentSenders counts exactly the slots seen within the window, as a scan of
// every slot's last time would.
TEST(RecentSenders, CountsTheSlotsSeenWithinTheWindow) {
  std::mt19937_64 rng(7);
  metaroce::transport::RecentSenders r;
  constexpr size_t kSlots = 50;
  constexpr Nanos kWindow = 1000;
  r.resize(kSlots);
  std::vector<Nanos> last(kSlots, INT64_MIN / 2);
  Nanos now = 0;
  for (int step = 0; step < 50'000; ++step) {
    now += static_cast<Nanos>(rng() % 40);
    if (rng() % 3) {
      const size_t s = rng() % last.size();
      r.seen(s, now);
      last[s] = now;
    } else {
      size_t want = 0;
      for (Nanos t : last) want += now - t <= kWindow;
      ASSERT_EQ(r.count(now, kWindow), want) << "step " << step;
    }
    if (step == 25'000) {  // growing keeps who was seen
      r.resize(last.size() + 10);
      last.resize(last.size() + 10, INT64_MIN / 2);
    }
    if (step % 997 == 0 && last.size() > 1) {  // a connection leaves: the last takes its slot, and its place
      const size_t s = rng() % last.size();
      r.swap_remove(s);
      last[s] = last.back();
      last.pop_back();
    }
  }
}

}  // namespace
