// SackWindow (receiver per-path state) and sack_covers (sender's reading of an AckBlock).
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "sack_window.h"

namespace metaroce::transport {
namespace {

using R = SackWindow::Result;

TEST(SackWindow, InOrderAdvancesWithoutGap) {
  SackWindow w;
  for (uint32_t s = 0; s < 1000; ++s) {
    EXPECT_EQ(w.on_packet(s, 0), R::kNew);
    EXPECT_EQ(w.cum(), s + 1);
    EXPECT_FALSE(w.has_gap());
  }
}

TEST(SackWindow, HoleIsReportedThenFilled) {
  SackWindow w;
  EXPECT_EQ(w.on_packet(0, 0), R::kNew);
  EXPECT_EQ(w.on_packet(2, 0), R::kNew);
  EXPECT_EQ(w.on_packet(3, 0), R::kNew);
  EXPECT_EQ(w.cum(), 1u);
  EXPECT_TRUE(w.has_gap());
  uint8_t bits[32];
  w.copy_bits(bits);
  EXPECT_EQ(bits[0], 0b011);  // cum+1 = 2 and cum+2 = 3
  EXPECT_FALSE(sack_covers(w.cum(), bits, 1));
  EXPECT_TRUE(sack_covers(w.cum(), bits, 0));
  EXPECT_TRUE(sack_covers(w.cum(), bits, 2));
  EXPECT_TRUE(sack_covers(w.cum(), bits, 3));
  EXPECT_FALSE(sack_covers(w.cum(), bits, 4));
  EXPECT_EQ(w.on_packet(1, 0), R::kNew);
  EXPECT_EQ(w.cum(), 4u);
  EXPECT_FALSE(w.has_gap());
}

TEST(SackWindow, DuplicatesAndLateCopiesAreFlagged) {
  SackWindow w;
  w.on_packet(0, 0);
  w.on_packet(5, 0);
  EXPECT_EQ(w.on_packet(5, 0), R::kDuplicate);
  EXPECT_EQ(w.on_packet(0, 0), R::kBelowWindow);
}

// A seq that arrives after a later one of its path came late (reordered on
// the way): the receiver counts it (EndpointCounters::rx_reordered_in_path).
// Against a set of what arrived, over random arrival orders and every word edge.
TEST(SackWindow, LaterArrivedMatchesWhatArrived) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 200; ++round) {
    SackWindow w;
    std::set<uint32_t> seen;
    for (int k = 0; k < 300; ++k) {
      const uint32_t seq = w.cum() + static_cast<uint32_t>(rng() % 258);
      bool later = false;
      for (uint32_t s : seen) later |= seq_diff(s, seq) > 0 && seq_diff(s, w.cum()) > 0;
      if (seq_diff(seq, w.cum()) <= static_cast<int32_t>(SackWindow::kBits)) {
        ASSERT_EQ(w.later_arrived(seq), later) << "seq " << seq << " cum " << w.cum();
      }
      if (w.on_packet(seq, 0) == R::kNew) seen.insert(seq);
    }
  }
  SackWindow w;
  w.on_packet(0, 0);
  w.on_packet(2, 0);
  EXPECT_TRUE(w.later_arrived(1));   // 2 came before it
  EXPECT_FALSE(w.later_arrived(3));  // in order
  w.on_packet(64 + 1, 0);            // bit 64: the second word
  EXPECT_TRUE(w.later_arrived(64));
  EXPECT_FALSE(w.later_arrived(66));
  EXPECT_FALSE(w.later_arrived(0));  // below the window: not new, not counted
}

TEST(SackWindow, WindowEdgeIs256Ahead) {
  SackWindow w;
  EXPECT_EQ(w.on_packet(256, 0), R::kNew);  // bit 255
  EXPECT_EQ(w.on_packet(257, 0), R::kBeyondWindow);
  uint8_t bits[32];
  w.copy_bits(bits);
  EXPECT_EQ(bits[31], 0x80);
}

TEST(SackWindow, FloorSlidesOverAbandonedHoles) {
  SackWindow w;
  // 0..2 lost, 3 arrived; the sender resolved 0..2 (resent elsewhere): floor 3.
  EXPECT_EQ(w.on_packet(3, 0), R::kNew);
  EXPECT_EQ(w.cum(), 0u);
  EXPECT_EQ(w.on_packet(4, 3), R::kNew);
  EXPECT_EQ(w.cum(), 5u);  // 3 was seen, so cum moves past 3 and 4
  EXPECT_FALSE(w.has_gap());
  // Floor to an unseen seq keeps the later SACK bits aligned.
  EXPECT_EQ(w.on_packet(9, 0), R::kNew);
  EXPECT_EQ(w.on_packet(11, 7), R::kNew);
  EXPECT_EQ(w.cum(), 7u);
  EXPECT_TRUE(w.received(9));
  EXPECT_TRUE(w.received(11));
  EXPECT_FALSE(w.received(8));
  EXPECT_FALSE(w.received(10));
}

TEST(SackWindow, FloorFarAheadClearsEverything) {
  SackWindow w;
  w.on_packet(10, 0);
  EXPECT_EQ(w.on_packet(5000, 5000), R::kNew);
  EXPECT_EQ(w.cum(), 5001u);
  EXPECT_FALSE(w.has_gap());
}

TEST(SackWindow, WrapsAround32Bits) {
  SackWindow w;
  const uint32_t start = 0xFFFFFFF0u;
  w.on_packet(0x7FFFFFFFu, 0x7FFFFFFFu);  // the floor moves the window up in steps < 2^31
  w.on_packet(start, start);
  EXPECT_EQ(w.cum(), start + 1);
  for (uint32_t k = 2; k < 40; k += 2) EXPECT_EQ(w.on_packet(start + k, start + 1), R::kNew);
  for (uint32_t k = 1; k < 40; k += 2) EXPECT_EQ(w.on_packet(start + k, start + 1), R::kNew);
  EXPECT_EQ(w.cum(), start + 40);  // wrapped past zero
  EXPECT_FALSE(w.has_gap());
}

// Property test against a set-based model: arrivals in random order with
// losses and a sender floor that trails the highest sent seq.
TEST(SackWindow, MatchesReferenceModel) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 50; ++trial) {
    SackWindow w;
    std::set<uint32_t> got;
    uint32_t floor = 0, sent = 0;
    for (int step = 0; step < 3000; ++step) {
      sent += 1 + rng() % 3;
      const uint32_t lo = sent > 200 ? sent - 200 : 0;
      if (rng() % 8 == 0 && lo > floor) floor = lo;
      if (sent - floor > 250) floor = sent - 250;  // the sender keeps seq - floor < 256
      const uint32_t seq = floor + static_cast<uint32_t>(rng() % (sent - floor + 1));
      const auto r = w.on_packet(seq, floor);
      ASSERT_NE(r, R::kBeyondWindow);
      const bool fresh = got.insert(seq).second;
      if (r == R::kNew) {
        ASSERT_TRUE(fresh) << "seq " << seq;
      }
      // Model: cum = smallest seq >= floor not received.
      uint32_t cum = floor;
      while (got.count(cum)) ++cum;
      ASSERT_EQ(w.cum(), cum);
      uint8_t bits[32];
      w.copy_bits(bits);
      for (uint32_t s = cum; s < cum + 300; ++s)
        ASSERT_EQ(sack_covers(w.cum(), bits, s), s < cum + 257 && got.count(s) > 0) << "seq " << s;
    }
  }
}

}  // namespace
}  // namespace metaroce::transport
