// RoCEv2 go-back-N baseline: WRITE / WRITE_IMM / SEND / SEND_IMM complete with
// exact data under 1% loss (go-back-N rewinds happen), none without loss.
#include "harness.h"

namespace engine_test {
namespace {

void run_rocev2(double loss, uint64_t seed, bool expect_rewinds) {
  Harness h(uniform_planes(1, make_link(25e9, 2 * kUs, {.loss = loss})), seed);
  const ConnPair conn = h.connect_rocev2(0);
  Traffic t(h, conn, 1, 8);
  const Verb verbs[] = {Verb::kWrite, Verb::kSend, Verb::kWriteImm, Verb::kSendImm};
  uint32_t imm = 0x5150;
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < 6; ++i) t.add(verbs[(i + round) % 4], 0, kSizes[(i + 3 * round) % 6], imm++);
  t.start();
  ASSERT_TRUE(h.run_until([&] { return t.done(); }, 500 * kMs)) << t.completed() << "/" << t.total();
  h.run_for(100 * kUs);
  t.check();
  const auto sa = h.ep(kA).stats(conn.a);
  EXPECT_EQ(sa.transport, mt::TransportKind::kRoCEv2);
  EXPECT_EQ(sa.messages_completed, t.total());
  if (expect_rewinds) {
    EXPECT_GT(sa.go_back_n, 0u) << "1% loss must make go-back-N rewind";
    EXPECT_GT(sa.retransmits, 0u);
  } else {
    EXPECT_EQ(sa.go_back_n, 0u);
    EXPECT_EQ(sa.retransmits, 0u);
    EXPECT_EQ(sa.rtos, 0u);
  }
}

TEST(RoCEv2, VerbsUnderOnePercentLossExactAndRewinds) { run_rocev2(0.01, 808, true); }
TEST(RoCEv2, VerbsWithoutLossExactAndNoRewinds) { run_rocev2(0.0, 809, false); }

TEST(RoCEv2, UnsupportedVerbsAndStreamsRefusedAtPost) {
  Harness h(uniform_planes(1));
  const ConnPair conn = h.connect_rocev2(0);
  Buffer& b = h.alloc(kA, 64, mt::kAccessLocalWrite, "buf");
  for (Verb v : {Verb::kRead, Verb::kFetchAdd, Verb::kCmpSwap}) {
    mt::WorkRequest wr;
    wr.verb = v;
    wr.local_addr = b.addr(0);
    wr.lkey = b.key;
    wr.length = 8;
    EXPECT_EQ(h.post(kA, conn.a, 0, wr), PostError::kUnsupported) << mt::verb_name(v);
  }
  mt::WorkRequest wr;
  wr.local_addr = b.addr(0);
  wr.lkey = b.key;
  wr.length = 8;
  EXPECT_EQ(h.post(kA, conn.a, 1, wr), PostError::kBadStream);
  // More than one path is refused at connection setup.
  mt::ConnectionConfig c = Harness::base_config(mt::TransportKind::kRoCEv2, 77, 78);
  c.paths = {{0, 1000}, {0, 1001}};
  std::string err;
  EXPECT_FALSE(h.ep(kA).create_connection(c, &err).has_value());
  EXPECT_FALSE(err.empty());
}

// A NAK (PSN sequence error) can reach the requester after an ACK that
// already passed its PSN: the fabric reordered them, or the NAK answered a
// frame that was held back. Such a stale NAK asks for PSNs the responder has
// and the requester has released; it must change nothing. (It used to move
// the next PSN below the oldest unacknowledged one, where no retransmission
// timeout moved it back: the QP went silent until retry_exceeded, seen live
// in reorder-storm.)
TEST(RoCEv2, AStaleSequenceNakChangesNothing) {
  Harness h(uniform_planes(1), 810);
  const ConnPair conn = h.connect_rocev2(0);
  Buffer& src = h.alloc(kA, 256 * 1024, mt::kAccessLocalWrite, "src");
  Buffer& dst = h.alloc(kB, 256 * 1024, mt::kAccessRemoteWrite, "dst");
  src.set_pattern(0, 256 * 1024, 7);
  auto write = [&](uint64_t id, size_t off) {
    mt::WorkRequest wr;
    wr.wr_id = id;
    wr.verb = Verb::kWrite;
    wr.local_addr = src.addr(off);
    wr.lkey = src.key;
    wr.length = 64 * 1024;
    wr.remote_addr = dst.addr(off);
    wr.rkey = dst.key;
    dst.expect_bytes(off, src.data() + off, 64 * 1024);
    return h.post(kA, conn.a, 0, wr);
  };
  ASSERT_EQ(write(1, 0), PostError::kOk);
  ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() == 1; }, 50 * kMs));
  // B's NAK for PSN 3, long since acknowledged, arriving now.
  namespace rv = mw::rocev2;
  mw::UdpFlow flow{kMacB, kMacA, kIpB, kIpA, 49152, rv::kUdpPort};
  rv::Aeth nak{rv::kSyndromeNakPsnSeqError, {0, 0, 0}};
  const size_t udp_len = rv::payload_bytes(rv::Opcode::kAcknowledge, 0);
  std::vector<uint8_t> frame(mw::kUdpFrameHeaderBytes + udp_len);
  mw::encode_udp_headers(frame, flow, mw::Ecn::kNotEct, 0, udp_len);
  rv::encode(std::span<uint8_t>(frame).subspan(mw::kUdpFrameHeaderBytes), rv::Opcode::kAcknowledge, conn.a, 3, false,
             nullptr, nullptr, &nak, {});
  rv::seal_icrc(frame);
  h.ep(kA).on_frame(frame, h.now());
  ASSERT_EQ(h.ep(kA).stats(conn.a).naks_received, 1u) << "the forged NAK did not reach the QP";
  ASSERT_EQ(write(2, 64 * 1024), PostError::kOk);
  ASSERT_EQ(write(3, 128 * 1024), PostError::kOk);
  EXPECT_TRUE(h.run_until([&] { return h.completions(kA).size() == 3; }, 50 * kMs))
      << "the QP went silent after a stale NAK (" << h.ep(kA).stats(conn.a).rtos << " RTOs)";
  const auto sa = h.ep(kA).stats(conn.a);
  EXPECT_EQ(sa.rtos, 0u);
  EXPECT_EQ(sa.retransmits, 0u) << "a stale NAK made the requester go back";
  for (const auto& c : h.completions(kA)) EXPECT_EQ(c.status, WcStatus::kSuccess) << describe(c);
  h.run_for(100 * kUs);
  EXPECT_TRUE(h.verify_all());
}

// The AETH's MSN counts the request messages the responder completed (IBTA
// 9.7.5.1.2), not its packets: a three-packet WRITE moves it by one, on its
// last packet. It counted packets.
TEST(RoCEv2, MsnCountsMessagesNotPackets) {
  Harness h(uniform_planes(1), 811);
  const ConnPair conn = h.connect_rocev2(0);
  const uint32_t mtu = mt::ConnectionConfig{}.mtu_payload;  // the harness keeps the default
  Buffer& src = h.alloc(kA, 4 * mtu, mt::kAccessLocalWrite, "src");
  Buffer& dst = h.alloc(kB, 4 * mtu, mt::kAccessRemoteWrite, "dst");
  src.set_pattern(0, 4 * mtu, 3);
  auto write = [&](uint64_t id, size_t off, uint32_t len) {
    mt::WorkRequest wr;
    wr.wr_id = id;
    wr.verb = Verb::kWrite;
    wr.local_addr = src.addr(off);
    wr.lkey = src.key;
    wr.length = len;
    wr.remote_addr = dst.addr(off);
    wr.rkey = dst.key;
    dst.expect_bytes(off, src.data() + off, len);
    return h.post(kA, conn.a, 0, wr);
  };
  namespace rv = mw::rocev2;
  // Every frame A sends, handed to B one by one; the MSN of each ACK B answers with.
  std::vector<uint32_t> msns;
  auto deliver_all = [&] {
    for (int round = 0; round < 8; ++round) {
      const auto from_a = collect_tx(h.ep(kA), h.now());
      if (from_a.empty()) break;
      for (const auto& f : from_a) {
        h.ep(kB).on_frame(f->bytes, h.now());
        for (const auto& back : collect_tx(h.ep(kB), h.now())) {
          ASSERT_TRUE(back->udp);
          rv::PacketView pv;
          ASSERT_TRUE(rv::decode(back->bytes, back->udp->payload, pv));
          ASSERT_TRUE(pv.aeth);
          msns.push_back(mw::load_be24(pv.aeth->msn));
          h.ep(kA).on_frame(back->bytes, h.now());
        }
      }
    }
  };
  ASSERT_EQ(write(1, 0, 3 * mtu), PostError::kOk);
  deliver_all();
  ASSERT_EQ(msns.size(), 3u) << "one ACK per packet (ack_every 1)";
  EXPECT_EQ(msns[0], 0u);
  EXPECT_EQ(msns[1], 0u);
  EXPECT_EQ(msns[2], 1u) << "the WRITE's last packet completes message 1";
  ASSERT_EQ(write(2, 3 * mtu, mtu), PostError::kOk);
  deliver_all();
  ASSERT_EQ(msns.size(), 4u);
  EXPECT_EQ(msns[3], 2u);
  EXPECT_TRUE(h.run_until([&] { return h.completions(kA).size() == 2; }, 10 * kMs));
  EXPECT_TRUE(h.verify_all());
}

// A NIC takes descriptors only while its queue has room: poll_tx_paced asks
// before every frame, so a connection that could fill a whole burst (a large
// WRITE after a go-back-N) puts no more than the queue's room plus one frame
// on its plane. One readiness check for the whole burst let 32 frames through.
TEST(RoCEv2, PacedPollStopsAtTheQueueLimit) {
  Harness h(uniform_planes(1));
  const ConnPair conn = h.connect_rocev2(0);
  Buffer& src = h.alloc(kA, 256 * 1024, mt::kAccessLocalWrite, "src");
  Buffer& dst = h.alloc(kB, 256 * 1024, mt::kAccessRemoteWrite, "dst");
  mt::WorkRequest wr;
  wr.wr_id = 1;
  wr.local_addr = src.addr(0);
  wr.lkey = src.key;
  wr.remote_addr = dst.addr(0);
  wr.rkey = dst.key;
  wr.length = 256 * 1024;
  ASSERT_EQ(h.post(kA, conn.a, 0, wr), PostError::kOk);
  constexpr uint64_t kRoom = 8 * 1024;
  std::vector<std::vector<uint8_t>> buffers(32, std::vector<uint8_t>(metaroce::wire::kMaxFrameBytes));
  std::vector<mt::TxFrame> burst(32);
  for (size_t i = 0; i < burst.size(); ++i) burst[i] = {buffers[i].data(), static_cast<uint32_t>(buffers[i].size()), 0, 0};
  uint64_t queued = 0, asked = 0;
  const size_t n = h.ep(kA).poll_tx_paced(
      burst, h.sim().now(),
      [&] {
        ++asked;
        return queued < kRoom ? uint64_t{1} : uint64_t{0};
      },
      [&](const mt::TxFrame& f) { queued += f.len; });
  ASSERT_GT(n, 1u);
  EXPECT_LT(n, burst.size()) << "the burst was filled past the queue's room";
  EXPECT_GE(queued, kRoom);
  EXPECT_LT(queued - burst[n - 1].len, kRoom) << "a frame was taken after the queue was full";
  EXPECT_EQ(asked, n + 1) << "readiness is asked before every frame, and once more to stop";
}

// The simulator's hosts send through poll_tx_paced: go-back-N under 5% loss
// keeps the round trip it has without loss (the NIC queue stays at its limit),
// instead of adding up to a burst of frames to it after every rewind (then
// 1.0-1.25 ms against 0.87 ms at 200 Mb/s).
TEST(RoCEv2, GoBackNUnderLossKeepsTheLosslessRoundTrip) {
  double srtt[2] = {};
  const double losses[2] = {0.0, 0.05};
  for (int i = 0; i < 2; ++i) {
    Harness h(uniform_planes(1, make_link(200e6, 5 * kUs, {.loss = losses[i]})), 4242);
    const ConnPair conn = h.connect_rocev2(0);
    Traffic t(h, conn, 1, 8);
    for (int m = 0; m < 24; ++m) t.add(Verb::kWrite, 0, 64 * 1024, 0);
    t.start();
    ASSERT_TRUE(h.run_until([&] { return t.done(); }, 5000 * kMs)) << t.completed() << "/" << t.total();
    t.check();
    srtt[i] = h.ep(kA).stats(conn.a).paths[0].srtt_ns;
    if (i == 1) {
      EXPECT_GT(h.ep(kA).stats(conn.a).go_back_n, 10u);
    }
  }
  ASSERT_GT(srtt[0], 0);
  EXPECT_LT(srtt[1], 1.05 * srtt[0]) << "srtt " << srtt[1] << " ns at 5% loss against " << srtt[0] << " ns without";
}

}  // namespace
}  // namespace engine_test
