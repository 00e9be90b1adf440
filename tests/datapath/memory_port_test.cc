// Memory port: byte-exact FIFO delivery, back-pressure, channel rules, fault
// injection counts, wakeups, and the SPSC ring across two threads.
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "metaroce/datapath/memory_port.h"
#include "metaroce/datapath/port.h"

namespace metaroce::datapath {
namespace {

std::string unique_channel() {
  static int n = 0;
  return "memtest" + std::to_string(getpid()) + "-" + std::to_string(n++) + "-" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

PortConfig memory_config(const std::string& channel, uint32_t ring_size = 64, uint32_t frame_size = 2048) {
  PortConfig c;
  c.kind = "memory";
  c.ifname = channel;
  c.ring_size = ring_size;
  c.frame_size = frame_size;
  return c;
}

std::unique_ptr<Port> must_open(const PortConfig& c) {
  std::string error;
  auto p = open_port(c, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

// A frame whose bytes are a function of its sequence number and length.
std::vector<uint8_t> make_frame(uint32_t seq, size_t len) {
  std::vector<uint8_t> f(len);
  for (size_t i = 0; i < len; ++i) f[i] = static_cast<uint8_t>(seq * 131 + i * 7 + (i >> 8));
  if (len >= 4) std::memcpy(f.data(), &seq, 4);
  return f;
}

uint32_t frame_seq(const RxFrame& f) {
  uint32_t s;
  std::memcpy(&s, f.data, 4);
  return s;
}

size_t send_all(Port& p, const std::vector<std::vector<uint8_t>>& frames) {
  std::vector<std::span<const uint8_t>> spans(frames.begin(), frames.end());
  const size_t n = p.tx_burst(spans);
  p.flush();
  return n;
}

// Receives until `want` frames arrived or nothing more comes; copies them out.
std::vector<std::vector<uint8_t>> receive(Port& p, size_t want) {
  std::vector<std::vector<uint8_t>> got;
  RxFrame rx[16];
  for (int idle = 0; got.size() < want && idle < 3;) {
    const size_t n = p.rx_burst(rx);
    idle = n ? 0 : idle + 1;
    for (size_t i = 0; i < n; ++i) got.emplace_back(rx[i].data, rx[i].data + rx[i].len);
  }
  return got;
}

TEST(MemoryPort, DeliversByteExactInOrder) {
  const std::string ch = unique_channel();
  auto a = must_open(memory_config(ch));
  auto b = must_open(memory_config(ch));
  ASSERT_TRUE(a && b);
  EXPECT_STREQ(a->kind(), "memory");
  EXPECT_EQ(memory_port_end(*a), 0);
  EXPECT_EQ(memory_port_end(*b), 1);

  std::vector<std::vector<uint8_t>> sent;
  for (uint32_t i = 0; i < 40; ++i) sent.push_back(make_frame(i, 4 + (i * 37) % 2000));
  sent.push_back({});  // an empty frame is delivered too
  ASSERT_EQ(send_all(*a, sent), sent.size());
  const auto got = receive(*b, sent.size());
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(got[i], sent[i]) << "frame " << i;

  // And the other direction, independently.
  ASSERT_EQ(send_all(*b, {make_frame(7, 100)}), 1u);
  const auto back = receive(*a, 1);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], make_frame(7, 100));

  const PortStats sa = a->stats(), sb = b->stats();
  EXPECT_EQ(sa.tx_frames, sent.size());
  EXPECT_EQ(sb.rx_frames, sent.size());
  size_t bytes = 0;
  for (const auto& f : sent) bytes += f.size();
  EXPECT_EQ(sa.tx_bytes, bytes);
  EXPECT_EQ(sb.rx_bytes, bytes);
  EXPECT_EQ(sa.rx_frames, 1u);
  EXPECT_EQ(sb.tx_frames, 1u);
}

TEST(MemoryPort, BackPressureWhenPeerRingIsFull) {
  const std::string ch = unique_channel();
  auto a = must_open(memory_config(ch, 8));
  auto b = must_open(memory_config(ch, 8));
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->tx_ready());
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t i = 0; i < 11; ++i) frames.push_back(make_frame(i, 64));
  EXPECT_EQ(send_all(*a, frames), 8u);  // a full ring is a normal result
  EXPECT_FALSE(a->tx_ready());
  EXPECT_EQ(a->stats().tx_ring_full, 3u);
  EXPECT_EQ(send_all(*a, {make_frame(99, 64)}), 0u);
  EXPECT_EQ(a->stats().tx_ring_full, 4u);

  // Frames stay owned by the receiver until its next rx_burst.
  RxFrame rx[3];
  ASSERT_EQ(b->rx_burst(rx), 3u);
  EXPECT_EQ(frame_seq(rx[0]), 0u);
  EXPECT_FALSE(a->tx_ready()) << "slots are released only at the next rx_burst";
  RxFrame none[1];
  (void)b->rx_burst(std::span<RxFrame>(none, 0));  // releases the previous three
  EXPECT_TRUE(a->tx_ready());
  EXPECT_EQ(send_all(*a, {make_frame(8, 64), make_frame(9, 64), make_frame(10, 64), make_frame(11, 64)}), 3u);
  const auto got = receive(*b, 8);
  ASSERT_EQ(got.size(), 8u);
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(got[i], make_frame(i + 3, 64));
}

TEST(MemoryPort, NoCarrierUntilPeerOpens) {
  const std::string ch = unique_channel();
  auto a = must_open(memory_config(ch));
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->tx_ready());
  EXPECT_EQ(send_all(*a, {make_frame(1, 64)}), 0u);
  auto b = must_open(memory_config(ch));
  ASSERT_TRUE(b);
  EXPECT_TRUE(a->tx_ready());
  EXPECT_EQ(send_all(*a, {make_frame(2, 64)}), 1u);
  EXPECT_EQ(receive(*b, 1).size(), 1u);
  b.reset();
  EXPECT_FALSE(a->tx_ready());
}

TEST(MemoryPort, ChannelRules) {
  const std::string ch = unique_channel();
  auto a = must_open(memory_config(ch, 16));
  auto b = must_open(memory_config(ch, 16));
  ASSERT_TRUE(a && b);
  std::string error;
  EXPECT_EQ(open_port(memory_config(ch, 16), &error), nullptr);
  EXPECT_EQ(error.rfind("ifname: ", 0), 0u) << error;
  EXPECT_NE(error.find(ch), std::string::npos) << error;

  // An end that closes can be taken again (same geometry), starting empty.
  ASSERT_EQ(send_all(*a, {make_frame(1, 64)}), 1u);
  b.reset();
  EXPECT_EQ(open_port(memory_config(ch, 32), &error), nullptr);
  EXPECT_EQ(error.rfind("ring_size: ", 0), 0u) << error;
  b = must_open(memory_config(ch, 16));
  ASSERT_TRUE(b);
  EXPECT_EQ(memory_port_end(*b), 1);
  EXPECT_TRUE(receive(*b, 1).empty()) << "a new holder does not see the old one's unread frames";
  ASSERT_EQ(send_all(*a, {make_frame(2, 64)}), 1u);
  auto got = receive(*b, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], make_frame(2, 64));

  // Both closed: the channel is gone, its name free for new geometry.
  a.reset();
  b.reset();
  EXPECT_FALSE(memory_fault_counters(ch, 0).has_value());
  auto c = must_open(memory_config(ch, 4));
  EXPECT_NE(c, nullptr);

  PortConfig bad = memory_config("");
  EXPECT_EQ(open_port(bad, &error), nullptr);
  EXPECT_EQ(error.rfind("ifname: ", 0), 0u) << error;
  bad = memory_config(unique_channel(), 0);
  EXPECT_EQ(open_port(bad, &error), nullptr);
  EXPECT_EQ(error.rfind("ring_size: ", 0), 0u) << error;
}

TEST(MemoryPort, FrameLargerThanReceiverIsTruncatedNotDelivered) {
  const std::string ch = unique_channel();
  auto a = must_open(memory_config(ch, 8, 4096));
  auto b = must_open(memory_config(ch, 8, 256));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(send_all(*a, {make_frame(1, 256), make_frame(2, 257), make_frame(3, 100)}), 3u);
  const auto got = receive(*b, 3);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], make_frame(1, 256));
  EXPECT_EQ(got[1], make_frame(3, 100));
  EXPECT_EQ(b->stats().rx_truncated, 1u);
}

TEST(MemoryPort, DropEveryNth) {
  const std::string ch = unique_channel();
  auto a = must_open(memory_config(ch, 64));
  auto b = must_open(memory_config(ch, 64));
  ASSERT_TRUE(a && b);
  MemoryFaults f;
  f.drop_every_nth = 3;
  std::string error;
  ASSERT_TRUE(set_memory_faults(ch, 0, f, &error)) << error;
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t i = 1; i <= 30; ++i) frames.push_back(make_frame(i, 80));
  EXPECT_EQ(send_all(*a, frames), 30u);  // the wire lost them, the port sent them
  EXPECT_EQ(a->stats().tx_frames, 30u);
  const auto got = receive(*b, 30);
  ASSERT_EQ(got.size(), 20u);
  std::vector<uint32_t> seqs;
  for (const auto& g : got) {
    uint32_t s;
    std::memcpy(&s, g.data(), 4);
    seqs.push_back(s);
    EXPECT_NE(s % 3, 0u) << "frame " << s << " should have been dropped";
    EXPECT_EQ(g, make_frame(s, 80));
  }
  EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end()));
  const auto c = memory_fault_counters(ch, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->frames, 30u);
  EXPECT_EQ(c->dropped_nth, 10u);
  EXPECT_EQ(c->dropped_random, 0u);
  EXPECT_EQ(c->corrupted, 0u);
  // The other direction is untouched.
  EXPECT_EQ(memory_fault_counters(ch, 1)->dropped_nth, 0u);
  ASSERT_TRUE(clear_memory_faults(ch, 0, &error)) << error;
  EXPECT_EQ(send_all(*a, frames), 30u);
  EXPECT_EQ(receive(*b, 30).size(), 30u);
}

// Sends `total` numbered frames through a->b in ring-sized chunks; returns the
// sequence numbers that arrived.
std::vector<uint32_t> pump(Port& a, Port& b, uint32_t total, uint32_t chunk) {
  std::vector<uint32_t> seqs;
  for (uint32_t base = 0; base < total; base += chunk) {
    std::vector<std::vector<uint8_t>> frames;
    for (uint32_t i = base; i < std::min(total, base + chunk); ++i) frames.push_back(make_frame(i, 64));
    EXPECT_EQ(send_all(a, frames), frames.size());
    for (const auto& g : receive(b, frames.size())) {
      uint32_t s;
      std::memcpy(&s, g.data(), 4);
      seqs.push_back(s);
    }
  }
  return seqs;
}

TEST(MemoryPort, SeededRandomDropIsReproducible) {
  const std::string ch = unique_channel();
  auto a = must_open(memory_config(ch, 256));
  auto b = must_open(memory_config(ch, 256));
  ASSERT_TRUE(a && b);
  MemoryFaults f;
  f.drop_probability = 0.25;
  f.seed = 42;
  std::string error;
  ASSERT_TRUE(set_memory_faults(ch, 0, f, &error)) << error;
  const auto first = pump(*a, *b, 20000, 256);
  auto c = memory_fault_counters(ch, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->frames, 20000u);
  EXPECT_EQ(c->dropped_random + first.size(), 20000u);
  EXPECT_NEAR(static_cast<double>(c->dropped_random) / 20000, 0.25, 0.02);

  ASSERT_TRUE(set_memory_faults(ch, 0, f, &error)) << error;  // same seed again: same losses
  const auto second = pump(*a, *b, 20000, 256);
  EXPECT_EQ(first, second);
  f.seed = 43;
  ASSERT_TRUE(set_memory_faults(ch, 0, f, &error)) << error;
  EXPECT_NE(pump(*a, *b, 20000, 256), first);
}

TEST(MemoryPort, CorruptsExactlyOneBit) {
  const std::string ch = unique_channel();
  auto a = must_open(memory_config(ch, 64));
  auto b = must_open(memory_config(ch, 64));
  ASSERT_TRUE(a && b);
  MemoryFaults f;
  f.corrupt_every_nth = 2;
  f.corrupt_bit = 8 * 10 + 3;  // byte 10, mask 0x10
  std::string error;
  ASSERT_TRUE(set_memory_faults(ch, 0, f, &error)) << error;
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t i = 1; i <= 10; ++i) frames.push_back(make_frame(i, 128));
  ASSERT_EQ(send_all(*a, frames), 10u);
  const auto got = receive(*b, 10);
  ASSERT_EQ(got.size(), 10u);
  for (uint32_t i = 0; i < 10; ++i) {
    std::vector<uint8_t> want = frames[i];
    if ((i + 1) % 2 == 0) want[10] ^= 0x10;
    EXPECT_EQ(got[i], want) << "frame " << i + 1;
  }
  EXPECT_EQ(memory_fault_counters(ch, 0)->corrupted, 5u);
  EXPECT_EQ(frames[0], make_frame(1, 128)) << "the sender's buffer is never touched";

  // Random bit: still exactly one bit differs.
  f.corrupt_every_nth = 0;
  f.corrupt_probability = 1;
  f.corrupt_bit = -1;
  f.seed = 9;
  ASSERT_TRUE(set_memory_faults(ch, 0, f, &error)) << error;
  ASSERT_EQ(send_all(*a, frames), 10u);
  const auto got2 = receive(*b, 10);
  ASSERT_EQ(got2.size(), 10u);
  for (uint32_t i = 0; i < 10; ++i) {
    int bits = 0;
    for (size_t k = 0; k < 128; ++k) bits += __builtin_popcount(got2[i][k] ^ frames[i][k]);
    EXPECT_EQ(bits, 1) << "frame " << i;
  }
  EXPECT_EQ(memory_fault_counters(ch, 0)->corrupted, 10u);
}

TEST(MemoryPort, FaultSettingErrors) {
  std::string error;
  EXPECT_FALSE(set_memory_faults("nosuchchannel-" + unique_channel(), 0, MemoryFaults{}, &error));
  EXPECT_EQ(error.rfind("channel: ", 0), 0u) << error;
  const std::string ch = unique_channel();
  auto a = must_open(memory_config(ch));
  MemoryFaults f;
  EXPECT_FALSE(set_memory_faults(ch, 2, f, &error));
  EXPECT_EQ(error.rfind("from_end: ", 0), 0u) << error;
  f.drop_probability = 1.5;
  EXPECT_FALSE(set_memory_faults(ch, 0, f, &error));
  EXPECT_EQ(error.rfind("drop_probability: must be in [0, 1]", 0), 0u) << error;
  f.drop_probability = 0;
  f.corrupt_probability = -0.1;
  EXPECT_FALSE(set_memory_faults(ch, 0, f, &error));
  EXPECT_EQ(error.rfind("corrupt_probability: ", 0), 0u) << error;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

TEST(MemoryPort, WaitFdWakesAnIdleReceiverOnce) {
  const std::string ch = unique_channel();
  auto a = must_open(memory_config(ch));
  auto b = must_open(memory_config(ch));
  ASSERT_TRUE(a && b);
  ASSERT_GE(b->wait_fd(), 0);
  RxFrame rx[8];
  EXPECT_EQ(b->rx_burst(rx), 0u);  // idle: arms the wakeup
  EXPECT_FALSE(readable(b->wait_fd()));
  ASSERT_EQ(send_all(*a, {make_frame(1, 64)}), 1u);
  EXPECT_TRUE(readable(b->wait_fd()));
  ASSERT_EQ(send_all(*a, {make_frame(2, 64)}), 1u);
  EXPECT_EQ(a->stats().wakeups, 1u) << "one kick per idle period";
  EXPECT_EQ(b->rx_burst(rx), 2u);
  EXPECT_EQ(b->rx_burst(rx), 0u);  // idle again: clears and re-arms
  EXPECT_FALSE(readable(b->wait_fd()));
  ASSERT_EQ(send_all(*a, {make_frame(3, 64)}), 1u);
  EXPECT_TRUE(readable(b->wait_fd()));
  EXPECT_EQ(a->stats().wakeups, 2u);
}

// The two ends on two threads: every frame arrives once, in order, intact,
// while back-pressure is hit constantly (small ring).
TEST(MemoryPort, SpscAcrossThreads) {
  const std::string ch = unique_channel();
  auto a = must_open(memory_config(ch, 32, 256));
  auto b = must_open(memory_config(ch, 32, 256));
  ASSERT_TRUE(a && b);
  constexpr uint32_t kFrames = 200000;
  std::atomic<bool> failed{false};
  std::thread consumer([&] {
    RxFrame rx[16];
    uint32_t next = 0;
    while (next < kFrames && !failed) {
      const size_t n = b->rx_burst(rx);
      for (size_t i = 0; i < n; ++i) {
        const uint32_t s = frame_seq(rx[i]);
        const auto want = make_frame(s, 16 + s % 200);
        if (s != next || rx[i].len != want.size() || std::memcmp(rx[i].data, want.data(), want.size()) != 0) {
          failed = true;
          break;
        }
        ++next;
      }
      if (n == 0) {
        pollfd p{b->wait_fd(), POLLIN, 0};
        poll(&p, 1, 1);  // exercises the wakeup path; the timeout bounds a lost wakeup
      }
    }
  });
  std::vector<uint8_t> buf[8];
  uint32_t seq = 0;
  while (seq < kFrames && !failed) {
    std::span<const uint8_t> spans[8];
    size_t n = 0;
    for (; n < 8 && seq + n < kFrames; ++n) {
      buf[n] = make_frame(seq + static_cast<uint32_t>(n), 16 + (seq + n) % 200);
      spans[n] = buf[n];
    }
    seq += static_cast<uint32_t>(a->tx_burst(std::span(spans, n)));
    a->flush();
  }
  consumer.join();
  EXPECT_FALSE(failed);
  EXPECT_EQ(a->stats().tx_frames, kFrames);
  EXPECT_EQ(b->stats().rx_frames, kFrames);
}

}  // namespace
}  // namespace metaroce::datapath
