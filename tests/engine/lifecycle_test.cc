// Posting errors, memory deregistration, connection teardown at the peer, and
// the RoCEv2 baseline's error and impairment handling.
#include "harness.h"

namespace engine_test {
namespace {

mt::WorkRequest wr_write(uint64_t id, const Buffer& src, const Buffer& dst, uint32_t len, size_t off = 0) {
  mt::WorkRequest wr;
  wr.wr_id = id;
  wr.verb = Verb::kWrite;
  wr.local_addr = src.addr();
  wr.lkey = src.key;
  wr.length = len;
  wr.remote_addr = dst.addr(off);
  wr.rkey = dst.key;
  return wr;
}

TEST(Post, ErrorsAreReportedAtPostTime) {
  Harness h(uniform_planes(1));
  const ConnPair conn = h.connect_metaroce(1, 2, [](mt::ConnectionConfig& c) { c.max_outstanding_per_stream = 4; });
  Buffer& src = h.alloc(kA, 4096, mt::kAccessLocalWrite, "src");
  Buffer& ro = h.alloc(kA, 64, 0, "readonly-local");
  Buffer& dst = h.alloc(kB, 1 << 21, mt::kAccessRemoteWrite, "dst");
  auto w = wr_write(1, src, dst, 64);
  EXPECT_EQ(h.post(kA, 999, 0, w), PostError::kUnknownConnection);
  EXPECT_EQ(h.post(kA, conn.a, 2, w), PostError::kBadStream);
  auto z = w;
  z.length = 0;
  EXPECT_EQ(h.post(kA, conn.a, 0, z), PostError::kBadLength);
  auto big = w;
  big.length = (1u << 20) + 1;
  EXPECT_EQ(h.post(kA, conn.a, 0, big), PostError::kBadLength);
  auto outside = w;
  outside.length = 4097;  // past the end of src's region
  EXPECT_EQ(h.post(kA, conn.a, 0, outside), PostError::kLocalProtection);
  auto badkey = w;
  badkey.lkey ^= 0x30000;
  EXPECT_EQ(h.post(kA, conn.a, 0, badkey), PostError::kLocalProtection);
  auto read_into_ro = w;
  read_into_ro.verb = Verb::kRead;
  read_into_ro.local_addr = ro.addr();
  read_into_ro.lkey = ro.key;
  EXPECT_EQ(h.post(kA, conn.a, 0, read_into_ro), PostError::kLocalProtection) << "READ needs local write";
  auto atomic = w;
  atomic.verb = Verb::kFetchAdd;
  atomic.length = 8;
  atomic.remote_addr = dst.addr(4);
  EXPECT_EQ(h.post(kA, conn.a, 0, atomic), PostError::kBadAlignment);
  atomic.remote_addr = dst.addr(8);
  atomic.length = 4;
  EXPECT_EQ(h.post(kA, conn.a, 0, atomic), PostError::kBadLength);
  auto recv = w;
  recv.verb = Verb::kRecv;
  EXPECT_EQ(h.post(kA, conn.a, 0, recv), PostError::kUnsupported);
  mt::RecvRequest rr{1, src.addr(), src.key, 0};
  EXPECT_EQ(h.post_recv(kB, conn.b, 0, rr), PostError::kBadLength);
  // Queue full at max_outstanding_per_stream, and room again after completions.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(h.post(kA, conn.a, 0, wr_write(10 + i, src, dst, 64)), PostError::kOk);
  EXPECT_EQ(h.post(kA, conn.a, 0, wr_write(20, src, dst, 64)), PostError::kQueueFull);
  EXPECT_EQ(h.post(kA, conn.a, 1, wr_write(21, src, dst, 64)), PostError::kOk) << "streams have separate queues";
  ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() == 5; }, 10 * kMs));
  EXPECT_EQ(h.post(kA, conn.a, 0, wr_write(22, src, dst, 64)), PostError::kOk);
  ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() == 6; }, 10 * kMs));
  for (const Completion& c : h.completions(kA)) EXPECT_EQ(c.status, WcStatus::kSuccess) << describe(c);
  EXPECT_TRUE(h.completions(kB).empty()) << "no receive completions for plain WRITEs";
}

// A region deregistered at B: a WRITE with its (now stale) rkey fails with
// kRemoteAccessError; a region registered later in the same slot is not hit.
TEST(Memory, StaleRkeyAfterDeregistrationRefused) {
  Harness h(uniform_planes(2));
  const ConnPair conn = h.connect_metaroce(2, 1);
  Buffer& src = h.alloc(kA, 8192, mt::kAccessLocalWrite, "src");
  src.set_pattern(0, src.len, 3);
  Buffer& old_dst = h.alloc(kB, 8192, mt::kAccessRemoteWrite, "old");
  const uint32_t stale = old_dst.key;
  ASSERT_TRUE(h.ep(kB).deregister_memory(stale));
  Buffer& fresh = h.alloc(kB, 8192, mt::kAccessRemoteWrite, "fresh");
  EXPECT_NE(fresh.key, stale);
  EXPECT_EQ(fresh.key & 0xFFFF, stale & 0xFFFF) << "test premise: same slot reused";
  auto w = wr_write(1, src, old_dst, 8192);
  ASSERT_EQ(h.post(kA, conn.a, 0, w), PostError::kOk);
  auto w2 = wr_write(2, src, fresh, 100);
  w2.rkey = stale;  // stale key, but an address inside the fresh region
  ASSERT_EQ(h.post(kA, conn.a, 0, w2), PostError::kOk);
  ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() == 2; }, 20 * kMs));
  EXPECT_EQ(h.completions(kA)[0].status, WcStatus::kRemoteAccessError) << describe(h.completions(kA)[0]);
  EXPECT_EQ(h.completions(kA)[1].status, WcStatus::kFlushed) << describe(h.completions(kA)[1]);
  h.run_for(1 * kMs);
  EXPECT_TRUE(h.verify_all());
}

// B destroys its end of the connection while A has WRITEs in flight: B's
// endpoint answers with unknown-connection NAKs, A fails the oldest WR with
// kRemoteAborted and flushes the rest, in post order, within bounded time.
TEST(Lifecycle, PeerDestroysConnectionMidTransfer) {
  Harness h(uniform_planes(2), 3);
  const ConnPair conn = h.connect_metaroce(2, 1);
  Buffer& src = h.alloc(kA, 1 << 20, mt::kAccessLocalWrite, "src");
  Buffer& dst = h.alloc(kB, 1 << 20, mt::kAccessRemoteWrite, "dst");
  for (uint64_t i = 0; i < 16; ++i)
    ASSERT_EQ(h.post(kA, conn.a, 0, wr_write(i + 1, src, dst, 64 * 1024, i * 64 * 1024)), PostError::kOk);
  h.sim().at(h.now() + 30 * kUs, [&] { EXPECT_TRUE(h.ep(kB).destroy_connection(conn.b)); });
  ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() == 16; }, 100 * kMs))
      << h.completions(kA).size() << "/16 completions";
  const auto& cs = h.completions(kA);
  size_t i = 0;
  while (i < cs.size() && cs[i].status == WcStatus::kSuccess) ++i;
  ASSERT_LT(i, cs.size()) << "teardown should have failed something";
  EXPECT_EQ(cs[i].status, WcStatus::kRemoteAborted) << describe(cs[i]);
  for (size_t k = 0; k < cs.size(); ++k) {
    EXPECT_EQ(cs[k].wr_id, k + 1) << "post order";
    if (k > i) {
      EXPECT_EQ(cs[k].status, WcStatus::kFlushed) << describe(cs[k]);
    }
  }
  EXPECT_GT(h.ep(kB).counters().naks_unknown_connection, 0u);
}

// A local_id names one connection whatever its transport: every call (post,
// stats, destroy) takes the id alone, so a second connection with an id in
// use is refused, the other transport's too.
TEST(Lifecycle, ALocalIdInUseByEitherTransportIsRefused) {
  Harness h(uniform_planes(1), 4);
  std::string err;
  mt::ConnectionConfig meta = Harness::base_config(mt::TransportKind::kMetaRoCE, 500, 501);
  meta.paths = {{0, 1000}};
  ASSERT_TRUE(h.ep(kA).create_connection(meta, &err)) << err;
  mt::ConnectionConfig roce = Harness::base_config(mt::TransportKind::kRoCEv2, 500, 502);
  roce.paths = {{0, 1001}};
  EXPECT_FALSE(h.ep(kA).create_connection(roce, &err).has_value());
  EXPECT_EQ(err, "local_id: 500 is in use");
  roce.local_id = 503;
  ASSERT_TRUE(h.ep(kA).create_connection(roce, &err)) << err;
  meta.local_id = 503;
  EXPECT_FALSE(h.ep(kA).create_connection(meta, &err).has_value());
  EXPECT_EQ(err, "local_id: 503 is in use");
  // Destroying one frees its id and leaves the other.
  EXPECT_TRUE(h.ep(kA).destroy_connection(500));
  EXPECT_TRUE(h.ep(kA).destroy_connection(503));
  EXPECT_FALSE(h.ep(kA).destroy_connection(500));
  meta.local_id = 500;
  EXPECT_TRUE(h.ep(kA).create_connection(meta, &err)) << err;
}

// RoCEv2: a WRITE with a bad rkey fails with kRemoteAccessError and the QP's
// later WRs are flushed; the target is untouched.
TEST(RoCEv2Errors, BadRkeyFailsAndFlushes) {
  Harness h(uniform_planes(1), 8);
  const ConnPair conn = h.connect_rocev2(0);
  Buffer& src = h.alloc(kA, 16384, mt::kAccessLocalWrite, "src");
  src.set_pattern(0, src.len, 1);
  Buffer& dst = h.alloc(kB, 16384, mt::kAccessRemoteWrite, "dst");
  Buffer& target = h.alloc(kB, 16384, mt::kAccessRemoteWrite, "target");
  ASSERT_EQ(h.post(kA, conn.a, 0, wr_write(1, src, dst, 8192)), PostError::kOk);
  auto bad = wr_write(2, src, target, 8192);
  bad.rkey += 0x10000;
  ASSERT_EQ(h.post(kA, conn.a, 0, bad), PostError::kOk);
  ASSERT_EQ(h.post(kA, conn.a, 0, wr_write(3, src, dst, 100, 8192)), PostError::kOk);
  ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() == 3; }, 20 * kMs));
  const auto& cs = h.completions(kA);
  EXPECT_EQ(cs[0].status, WcStatus::kSuccess) << describe(cs[0]);
  EXPECT_EQ(cs[1].status, WcStatus::kRemoteAccessError) << describe(cs[1]);
  EXPECT_EQ(cs[2].status, WcStatus::kFlushed) << describe(cs[2]);
  dst.expect_bytes(0, src.data(), 8192);
  h.run_for(1 * kMs);
  EXPECT_TRUE(h.verify_all());
}

// RoCEv2: the whole RETH range (VA, DMA length) is checked on the first
// packet, as InfiniBand does: a WRITE running past the region's end is NAKed
// (remote access error) with nothing placed, not ACKed for its first packets.
TEST(RoCEv2Errors, WriteRangePastRegionEndPlacesNothing) {
  Harness h(uniform_planes(1), 8);
  const ConnPair conn = h.connect_rocev2(0);
  Buffer& src = h.alloc(kA, 16384, mt::kAccessLocalWrite, "src");
  src.set_pattern(0, src.len, 3);
  Buffer& dst = h.alloc(kB, 16384, mt::kAccessRemoteWrite, "dst");
  // 16 KiB from the middle: the first 8 KiB (two or more packets) would fit.
  ASSERT_EQ(h.post(kA, conn.a, 0, wr_write(1, src, dst, 16384, 8192)), PostError::kOk);
  ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() == 1; }, 20 * kMs));
  EXPECT_EQ(h.completions(kA)[0].status, WcStatus::kRemoteAccessError) << describe(h.completions(kA)[0]);
  h.run_for(1 * kMs);
  EXPECT_TRUE(h.verify_all());  // dst and its guards exactly as they were
  EXPECT_EQ(h.ep(kB).stats(conn.b).naks_sent, 1u);
  // Every rejection is counted by its cause on both sides, and what reached
  // the QP after it entered the error state is counted, not silently lost.
  const auto remote_access = static_cast<size_t>(mt::RejectCode::kRemoteAccess);
  EXPECT_EQ(h.ep(kB).counters().naks_sent[remote_access], 1u);
  EXPECT_EQ(h.ep(kA).counters().naks_received[remote_access], 1u);
  EXPECT_GT(h.ep(kB).counters().drop_qp_error, 0u);
  EXPECT_EQ(h.ep(kB).counters().drop_checksum, 0u);
}

// RoCEv2 under duplication and reordering: still exact (duplicates are
// re-acknowledged, out-of-sequence PSNs NAKed and resent).
TEST(RoCEv2Errors, DuplicationAndReorderExact) {
  Harness h(uniform_planes(1, make_link(25e9, 2 * kUs, {.duplicate = 0.1, .reorder = 0.05, .reorder_delay_ns = 3000})),
            9);
  const ConnPair conn = h.connect_rocev2(0);
  Traffic t(h, conn, 1, 8);
  const Verb vs[] = {Verb::kWrite, Verb::kSend, Verb::kWriteImm, Verb::kSendImm};
  const uint32_t sizes[] = {1, 4095, 4097, 65536, 300000};
  for (size_t i = 0; i < 12; ++i) t.add(vs[i % 4], 0, sizes[i % 5], static_cast<uint32_t>(i));
  t.start();
  ASSERT_TRUE(h.run_until([&] { return t.done(); }, 200 * kMs)) << t.completed() << "/" << t.total();
  h.run_for(100 * kUs);
  t.check();
  EXPECT_GT(h.ep(kB).stats(conn.b).duplicates_received, 0u);
}

// BUG (open): metaroce_timers.cc, service_timers: the message timer (and
// its retry_limit -> kRetryExceeded) only runs when every chunk of the head
// message is path-acked; RTOs of down paths never count against the message
// and pick_path() skips down paths, so with no live path a WR hangs forever.
// Every plane dead for good: the oldest WR fails with kRetryExceeded after the
// retry budget, later ones are flushed, all within bounded virtual time.
TEST(Lifecycle, AllPlanesDownFailsWithRetryExceeded) {
  Harness h(uniform_planes(2), 4);
  const ConnPair conn = h.connect_metaroce(2, 1);
  Buffer& src = h.alloc(kA, 65536, mt::kAccessLocalWrite, "src");
  Buffer& dst = h.alloc(kB, 65536, mt::kAccessRemoteWrite, "dst");
  ASSERT_EQ(h.post(kA, conn.a, 0, wr_write(1, src, dst, 4096)), PostError::kOk);
  ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() == 1; }, 10 * kMs));
  h.fabric().set_plane_up(0, false);
  h.fabric().set_plane_up(1, false);
  ASSERT_EQ(h.post(kA, conn.a, 0, wr_write(2, src, dst, 65536)), PostError::kOk);
  ASSERT_EQ(h.post(kA, conn.a, 0, wr_write(3, src, dst, 100)), PostError::kOk);
  ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() == 3; }, 2000 * kMs))
      << "a WR on a connection whose every path is dead never completed";
  EXPECT_EQ(h.completions(kA)[1].status, WcStatus::kRetryExceeded) << describe(h.completions(kA)[1]);
  EXPECT_EQ(h.completions(kA)[2].status, WcStatus::kFlushed) << describe(h.completions(kA)[2]);
}

// BUG (open): rocev2_connection.cc, on_ack RNR branch: RNR NAKs are never
// counted against tuning.rnr_retry_limit, so the SEND retries forever.
// RoCEv2 SEND with no receive ever posted: the RNR retry budget
// (tuning.rnr_retry_limit) must end it with kRnrRetryExceeded.
TEST(RoCEv2Errors, NoReceiveFailsWithRnrRetryExceeded) {
  Harness h(uniform_planes(1), 10);
  const ConnPair conn = h.connect_rocev2(0);
  Buffer& src = h.alloc(kA, 4096, mt::kAccessLocalWrite, "src");
  mt::WorkRequest wr;
  wr.wr_id = 1;
  wr.verb = Verb::kSend;
  wr.local_addr = src.addr();
  wr.lkey = src.key;
  wr.length = 4096;
  ASSERT_EQ(h.post(kA, conn.a, 0, wr), PostError::kOk);
  ASSERT_TRUE(h.run_until([&] { return !h.completions(kA).empty(); }, 100 * kMs))
      << "RoCEv2 SEND without a receive retried RNR forever (" << h.ep(kA).stats(conn.a).naks_received << " NAKs)";
  EXPECT_EQ(h.completions(kA)[0].status, WcStatus::kRnrRetryExceeded);
}

// BUG (open): rocev2_connection.cc, poll_tx RTO branch: backoff_ grows but is
// never compared with tuning.retry_limit, so the WR retries forever.
// RoCEv2 with its only plane dead: the retry budget must end the WR with
// kRetryExceeded (IB: transport retry counter exceeded).
TEST(RoCEv2Errors, DeadPathFailsWithRetryExceeded) {
  Harness h(uniform_planes(1), 11);
  const ConnPair conn = h.connect_rocev2(0);
  Buffer& src = h.alloc(kA, 4096, mt::kAccessLocalWrite, "src");
  Buffer& dst = h.alloc(kB, 4096, mt::kAccessRemoteWrite, "dst");
  h.fabric().set_plane_up(0, false);
  ASSERT_EQ(h.post(kA, conn.a, 0, wr_write(1, src, dst, 4096)), PostError::kOk);
  // Never an RTT sample: the timer starts at initial_rto_ns (10 ms) and backs
  // off to 2^8 of it: 10 ms x (1 + 2 + ... + 256) + 7 x 2.56 s = 23 s for the
  // 16 retries of retry_limit.
  ASSERT_TRUE(h.run_until([&] { return !h.completions(kA).empty(); }, 30'000 * kMs))
      << "RoCEv2 WR on a dead path never completed (" << h.ep(kA).stats(conn.a).rtos << " RTOs)";
  EXPECT_EQ(h.completions(kA)[0].status, WcStatus::kRetryExceeded);
}

}  // namespace
}  // namespace engine_test
