// RoCEv2 go-back-N baseline: WRITE / WRITE_IMM / SEND / SEND_IMM complete with
// exact data under 1% loss (go-back-N rewinds happen), none without loss.
#include "harness.h"

namespace engine_test {
namespace {

const uint32_t kSizes[] = {1, 4095, 4096, 4097, 64 * 1024, 1024 * 1024};

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

}  // namespace
}  // namespace engine_test
