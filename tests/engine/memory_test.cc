// Memory per connection (docs/architecture.md, "Memory per connection"): an
// idle MetaRoCE connection holds little; a stream's and a path's arrays appear
// when first needed and are then reused, never reallocated; the engine's own
// account (state_bytes) adds up; and a connection whose state appeared late
// behaves exactly as one whose state was built before any traffic.
#include <malloc.h>

#include "harness.h"
#include "metaroce/transport/connection_params.h"

namespace engine_test {
namespace {

// The bound for an idle connection ("idle connections small": a daemon
// holds at least 16,000 connections).
constexpr size_t kIdleBound = 2048;

// A connection as the daemon makes it when its creator leaves everything out
// (connection_params.h) on the 4-plane lab: 2 paths per plane.
mt::ConnectionConfig daemon_default(uint32_t id) {
  mt::ConnectionConfig c = Harness::base_config(mt::TransportKind::kMetaRoCE, id, id + 0x100000);
  const size_t paths = mt::kDefaultPathsPerPlane * 4;
  for (size_t p = 0; p < paths; ++p) c.paths.push_back({static_cast<uint8_t>(p % 4), static_cast<uint16_t>(49152 + p)});
  c.streams = static_cast<uint16_t>(mt::kParamStreams.default_value);
  c.max_outstanding_per_stream = static_cast<uint32_t>(mt::kParamQueueDepth.default_value);
  c.mtu_payload = static_cast<uint32_t>(mt::kParamMtuPayload.default_value);
  c.max_message_bytes = static_cast<uint32_t>(mt::kParamMaxMessage.default_value);
  return c;
}

uint64_t state(Harness& h, Side s, uint32_t conn) { return h.ep(s).stats(conn).state_bytes; }

// 256 idle connections with the daemon's defaults: the heap they take (glibc's
// own count, malloc overhead and the endpoint's tables included) and the
// engine's account are each at most kIdleBound per connection, the endpoint's
// total is the sum of the connections', and destroying them returns it to 0.
TEST(ConnectionMemory, IdleConnectionIsSmall) {
  mt::EndpointConfig ec;
  ec.ip = kIpA, ec.mac = kMacA;
  mt::Endpoint ep(ec);
  constexpr uint32_t kCount = 256;
  const size_t before = mallinfo2().uordblks;
  for (uint32_t i = 1; i <= kCount; ++i) {
    std::string err;
    ASSERT_TRUE(ep.create_connection(daemon_default(i), &err)) << err;
  }
  const size_t heap_per_connection = (mallinfo2().uordblks - before) / kCount;
  EXPECT_LE(heap_per_connection, kIdleBound);
  uint64_t sum = 0;
  for (uint32_t i = 1; i <= kCount; ++i) {
    const mt::ConnectionStats s = ep.stats(i);
    EXPECT_LE(s.state_bytes, kIdleBound);
    EXPECT_GT(s.state_bytes, 0u);
    EXPECT_EQ(s.paths.size(), mt::kDefaultPathsPerPlane * 4) << "an idle connection still reports every path";
    sum += s.state_bytes;
  }
  EXPECT_EQ(ep.counters().connection_state_bytes, sum);
  for (uint32_t i = 1; i <= kCount; ++i) ASSERT_TRUE(ep.destroy_connection(i));
  EXPECT_EQ(ep.counters().connection_state_bytes, 0u);
}

// What an idle connection reports is what it reports once its paths exist
// (activated here by an operator's set_path_entropy to the port it already has).
TEST(ConnectionMemory, IdleStatsEqualActivatedStats) {
  mt::EndpointConfig ec;
  ec.ip = kIpA, ec.mac = kMacA;
  mt::Endpoint ep(ec);
  const mt::ConnectionConfig cfg = daemon_default(1);
  ASSERT_TRUE(ep.create_connection(cfg, nullptr));
  const mt::ConnectionStats idle = ep.stats(1);
  ASSERT_TRUE(ep.set_path_entropy(1, 0, cfg.paths[0].src_port));
  const mt::ConnectionStats active = ep.stats(1);
  EXPECT_GT(active.state_bytes, idle.state_bytes) << "set_path_entropy must have built the paths";
  ASSERT_EQ(idle.paths.size(), active.paths.size());
  for (size_t p = 0; p < idle.paths.size(); ++p) {
    const mt::PathStats &a = idle.paths[p], &b = active.paths[p];
    EXPECT_EQ(a.plane, b.plane);
    EXPECT_EQ(a.src_port, b.src_port);
    EXPECT_EQ(a.state, b.state);
    EXPECT_EQ(a.cwnd_bytes, b.cwnd_bytes);
    EXPECT_EQ(a.srtt_ns, b.srtt_ns);
    EXPECT_EQ(a.loss_ewma, b.loss_ewma);
    EXPECT_EQ(a.inflight, b.inflight);
    EXPECT_EQ(a.packets_sent, b.packets_sent);
  }
  EXPECT_EQ(idle.conn_cwnd_bytes, active.conn_cwnd_bytes);
}

// State grows with what the connection does, once per kind of use, and a
// second use of the same kind allocates nothing: a WRITE gives the requester
// its request slots and transmission records and the responder its receive
// window; a WRITE on the second stream adds that stream's slots only; a READ
// gives the responder its response slots (and records to send them) and the
// requester nothing more. Every transfer is verified byte for byte.
TEST(ConnectionMemory, StateGrowsWithUseOnly) {
  Harness h(uniform_planes(2));
  const ConnPair conn = h.connect_metaroce(4, 2);
  const uint64_t idle_a = state(h, kA, conn.a), idle_b = state(h, kB, conn.b);
  ASSERT_EQ(idle_a, idle_b);
  ASSERT_LE(idle_a, kIdleBound);

  uint64_t wr_id = 0;
  auto run = [&](Verb verb, uint16_t stream) {
    const uint32_t len = is_atomic(verb) ? 8 : 8 * 1024;
    Buffer& local = h.alloc(kA, len, mt::kAccessLocalWrite, "local");
    Buffer& remote =
        h.alloc(kB, len, mt::kAccessRemoteWrite | mt::kAccessRemoteRead | mt::kAccessRemoteAtomic, "remote");
    mt::WorkRequest wr;
    wr.verb = verb;
    wr.wr_id = ++wr_id;
    wr.local_addr = local.addr();
    wr.lkey = local.key;
    wr.length = len;
    wr.remote_addr = remote.addr();
    wr.rkey = remote.key;
    if (verb == Verb::kWrite) {
      local.set_pattern(0, len, wr_id);
      remote.expect_bytes(0, local.data(), len);
    } else if (verb == Verb::kRead) {
      remote.set_pattern(0, len, wr_id);
      local.expect_bytes(0, remote.data(), len);
    } else {
      remote.set_u64(0, 40);
      wr.compare_add = 2;
      remote.expect_u64(0, 42);
      local.expect_u64(0, 40);
    }
    const size_t before = h.completions(kA).size();
    ASSERT_EQ(h.post(kA, conn.a, stream, wr), PostError::kOk);
    ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() > before; }, 50 * kMs));
    EXPECT_EQ(h.completions(kA).back().status, WcStatus::kSuccess) << describe(h.completions(kA).back());
    EXPECT_TRUE(h.verify_all());
  };
  run(Verb::kWrite, 0);
  const uint64_t write_a = state(h, kA, conn.a), write_b = state(h, kB, conn.b);
  EXPECT_GT(write_a, idle_a);
  EXPECT_GT(write_b, idle_b);

  run(Verb::kWrite, 0);
  EXPECT_EQ(state(h, kA, conn.a), write_a) << "a second WRITE on a stream allocates nothing";
  EXPECT_EQ(state(h, kB, conn.b), write_b);

  run(Verb::kWrite, 1);
  const uint64_t second_a = state(h, kA, conn.a), second_b = state(h, kB, conn.b);
  EXPECT_GT(second_a, write_a);
  EXPECT_LT(second_a - write_a, write_a - idle_a) << "the second stream adds its requests, not the paths' records";
  EXPECT_GT(second_b, write_b);
  EXPECT_LT(second_b - write_b, write_b - idle_b) << "the second stream adds its receive window, not the paths";

  run(Verb::kRead, 0);
  EXPECT_EQ(state(h, kA, conn.a), second_a) << "the requester of a READ needs nothing it did not have";
  const uint64_t read_b = state(h, kB, conn.b);
  EXPECT_GT(read_b, second_b) << "the responder of a READ holds its response slots from now on";

  run(Verb::kFetchAdd, 0);
  EXPECT_EQ(state(h, kA, conn.a), second_a);
  EXPECT_EQ(state(h, kB, conn.b), read_b) << "an atomic reuses the READ's response slots";
  EXPECT_EQ(h.ep(kA).counters().connection_state_bytes, state(h, kA, conn.a));
  EXPECT_EQ(h.ep(kB).counters().connection_state_bytes, state(h, kB, conn.b));
}

// A path's transmission records start few and double only when its window
// needs more. A path that never has more than a couple of packets in flight
// keeps its first records; a long fat path's records grow while frames are
// outstanding and lost, and a plane that fails with a full window behind it
// loses more at once than the retransmit queue first held (so it grows too);
// every byte still arrives exactly. Once at the cap, more traffic allocates
// nothing.
TEST(ConnectionMemory, PathRecordsGrowWithTheWindowOnly) {
  // 25 Gb/s, 100 us each way: 625 kB in flight at full rate per plane, past
  // the cap of 256 records of 1 kB.
  Harness h(uniform_planes(2, make_link(25e9, 100 * kUs, {.loss = 0.01})), 9);
  const ConnPair conn = h.connect_metaroce(2, 1, [](mt::ConnectionConfig& c) { c.max_message_bytes = 8u << 20; });
  uint64_t wr_id = 0;
  // Posts a WRITE of len bytes; runs until mid_transfer holds (then calls
  // then()), and on until it completes, verified.
  auto transfer = [&](uint32_t len, const std::function<bool()>& mid_transfer = {},
                      const std::function<void()>& then = {}) {
    Buffer& local = h.alloc(kA, len, mt::kAccessLocalWrite, "local");
    Buffer& remote = h.alloc(kB, len, mt::kAccessRemoteWrite, "remote");
    local.set_pattern(0, len, ++wr_id);
    remote.expect_bytes(0, local.data(), len);
    mt::WorkRequest wr;
    wr.verb = Verb::kWrite;
    wr.wr_id = wr_id;
    wr.local_addr = local.addr();
    wr.lkey = local.key;
    wr.length = len;
    wr.remote_addr = remote.addr();
    wr.rkey = remote.key;
    const size_t before = h.completions(kA).size();
    ASSERT_EQ(h.post(kA, conn.a, 0, wr), PostError::kOk);
    if (mid_transfer) {
      ASSERT_TRUE(h.run_until(mid_transfer, 2000 * kMs));
      then();
    }
    ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() > before; }, 2000 * kMs));
    EXPECT_EQ(h.completions(kA).back().status, WcStatus::kSuccess) << describe(h.completions(kA).back());
    EXPECT_TRUE(h.verify_all());
  };
  transfer(1500);  // two frames in flight at most
  const uint64_t first = state(h, kA, conn.a);
  transfer(1500);
  EXPECT_EQ(state(h, kA, conn.a), first) << "paths with a frame or two in flight keep their first records";

  // Plane 1 fails while its path has 140 frames in flight: one timeout loses
  // them all, and they are resent on plane 0.
  transfer(
      8u << 20, [&] { return h.ep(kA).stats(conn.a).paths[1].inflight >= 140; },
      [&] { h.fabric().set_plane_up(1, false); });
  const uint64_t grown = state(h, kA, conn.a);
  const mt::ConnectionStats st = h.ep(kA).stats(conn.a);
  EXPECT_GE(st.paths[1].rtos, 1u);
  EXPECT_GE(st.paths[1].lost, 140u);
  EXPECT_GT(st.paths[0].lost, 0u) << "plane 0's own losses were recovered while its records grew";
  // Both paths' records at the cap (256 of 32 bytes, 16 at first), and the
  // retransmit queue doubled once, from 2 x 16 x 2 + 64 = 128 entries of 12
  // bytes, to hold the 140.
  EXPECT_EQ(grown - first, 2 * 240u * 32 + 128u * 12);
  EXPECT_EQ(h.ep(kA).counters().connection_state_bytes, grown);

  h.fabric().set_plane_up(1, true);
  transfer(8u << 20);
  EXPECT_EQ(state(h, kA, conn.a), grown) << "at the cap, more traffic allocates nothing";
}

// A connection prepared at a control-plane moment (Endpoint::prepare, as the
// daemon's traffic jobs do at their start) allocates nothing once traffic runs,
// and holds what first use would have given it, with its paths' transmission
// records at their cap (first use starts them small and grows them).
TEST(ConnectionMemory, PreparedConnectionAllocatesNothingOnTraffic) {
  Harness lazy(uniform_planes(2)), prepared(uniform_planes(2));
  const ConnPair cl = lazy.connect_metaroce(4, 2), cp = prepared.connect_metaroce(4, 2);
  for (uint16_t s = 0; s < 2; ++s) {
    ASSERT_TRUE(prepared.ep(kA).prepare(cp.a, s, mt::ConnectionUse::kRequest));
    ASSERT_TRUE(prepared.ep(kB).prepare(cp.b, s, mt::ConnectionUse::kReceive));
    ASSERT_TRUE(prepared.ep(kB).prepare(cp.b, s, mt::ConnectionUse::kRespond));
  }
  EXPECT_FALSE(prepared.ep(kA).prepare(cp.a, 2, mt::ConnectionUse::kRequest)) << "the connection has 2 streams";
  const uint64_t prepared_a = state(prepared, kA, cp.a), prepared_b = state(prepared, kB, cp.b);
  for (auto [h, conn] : {std::pair{&lazy, cl}, std::pair{&prepared, cp}}) {
    Traffic t(*h, conn, 2, 16);
    for (uint16_t s = 0; s < 2; ++s) {
      t.add(Verb::kWrite, s, 6000);
      t.add(Verb::kRead, s, 6000);
    }
    t.start();
    ASSERT_TRUE(h->run_until([&] { return t.done(); }, 50 * kMs));
    t.check();
  }
  EXPECT_EQ(state(prepared, kA, cp.a), prepared_a);
  EXPECT_EQ(state(prepared, kB, cp.b), prepared_b);
  // Prepared, the 4 paths' transmission records are at their cap (256 of 32
  // bytes) and the retransmit queue holds 4 x 256 x 2 + 64 entries of 12
  // bytes; used lazily, these short flights left them at their first size
  // (16 and 4 x 16 x 2 + 64), and the rest is the same.
  const uint64_t records_at_cap = 4 * (256 - 16) * 32 + 4 * (256 - 16) * 2 * 12;
  EXPECT_EQ(state(lazy, kA, cl.a) + records_at_cap, prepared_a) << "prepare allocates what first use allocates, at the cap";
  EXPECT_EQ(state(lazy, kB, cl.b) + records_at_cap, prepared_b) << "the READ responder's records";
}

// A connection prepared for one use gets its transmission records at their
// cap for another too: metaroced prepares its responders to receive, and a
// READ's first response then allocates their records once, at the cap, not
// at their first size to grow them while traffic runs.
TEST(ConnectionMemory, APreparedResponderGetsItsRecordsAtTheCapForItsFirstRead) {
  Harness lazy(uniform_planes(2)), prepared(uniform_planes(2));
  const ConnPair cl = lazy.connect_metaroce(4, 1), cp = prepared.connect_metaroce(4, 1);
  ASSERT_TRUE(prepared.ep(kB).prepare(cp.b, 0, mt::ConnectionUse::kReceive));
  for (auto [h, conn] : {std::pair{&lazy, cl}, std::pair{&prepared, cp}}) {
    Traffic t(*h, conn, 1, 16);
    t.add(Verb::kRead, 0, 6000);
    t.start();
    ASSERT_TRUE(h->run_until([&] { return t.done(); }, 50 * kMs));
    t.check();
  }
  const uint64_t records_at_cap = 4 * (256 - 16) * 32 + 4 * (256 - 16) * 2 * 12;
  EXPECT_EQ(state(lazy, kB, cl.b) + records_at_cap, state(prepared, kB, cp.b));
}

// Everything observable about one run of mixed verbs on a lossy, duplicating,
// reordering fabric: every completion with its virtual time, every path's and
// the connection's figures, and the endpoints' counters.
struct Outcome {
  std::vector<std::string> events;
  bool operator==(const Outcome&) const = default;
};

Outcome run_mixed(bool build_state_first) {
  Harness h(uniform_planes(2, make_link(25e9, 2 * kUs, {.loss = 0.02, .duplicate = 0.02, .reorder = 0.05,
                                                             .reorder_delay_ns = 3 * kUs})),
            77);
  const ConnPair conn = h.connect_metaroce(4, 2);
  if (build_state_first) {
    // An operator's entropy change to the port each side already has: the
    // connections' paths and streams exist before any traffic.
    const uint64_t idle = state(h, kA, conn.a);
    EXPECT_TRUE(h.ep(kA).set_path_entropy(conn.a, 0, 49152));
    EXPECT_TRUE(h.ep(kB).set_path_entropy(conn.b, 0, 49152));
    EXPECT_GT(state(h, kA, conn.a), idle);
  }
  Outcome o;
  h.add_listener([&](Side s, const Completion& c) {
    o.events.push_back(std::to_string(h.now()) + " " + side_name(s) + " " + describe(c));
  });
  Traffic t(h, conn, 2, 16);
  const size_t counter = t.add_counter(5);
  for (int i = 0; i < 12; ++i) {
    const uint16_t stream = static_cast<uint16_t>(i % 2);
    t.add(Verb::kWrite, stream, 3000 + 1000 * i);
    t.add(Verb::kSend, stream, 1500);
    t.add(Verb::kRead, stream, 9000);
    t.add_fetch_add(stream, counter, 1);
    t.add(Verb::kWriteImm, stream, 700, 42);
  }
  t.start();
  EXPECT_TRUE(h.run_until([&] { return t.done(); }, 500 * kMs)) << t.completed() << "/" << t.total();
  t.check();
  EXPECT_GT(h.ep(kA).stats(conn.a).retransmits + h.ep(kB).stats(conn.b).retransmits, 0u)
      << "the run must exercise loss recovery";
  for (Side s : {kA, kB}) {
    const mt::ConnectionStats st = h.ep(s).stats(s == kA ? conn.a : conn.b);
    std::ostringstream e;
    e << side_name(s) << " sent " << st.data_packets_sent << "/" << st.data_bytes_sent << " retx "
      << st.retransmits << " spurious " << st.spurious_retransmits << " rtos " << st.rtos << " done "
      << st.messages_completed << " dup " << st.duplicates_received << " naks " << st.naks_sent << "/"
      << st.naks_received << " cwnd " << st.conn_cwnd_bytes;
    for (const mt::PathStats& p : st.paths)
      e << " | " << p.packets_sent << " " << p.retransmits << " " << p.lost << " " << p.payload_bytes_acked << " "
        << p.probes << " " << p.srtt_ns << " " << p.cwnd_bytes << " " << p.loss_ewma << " " << p.src_port;
    const mt::EndpointCounters& c = h.ep(s).counters();
    e << " | frames " << c.frames_in << "/" << c.frames_out << " window " << c.drop_out_of_window;
    o.events.push_back(e.str());
  }
  return o;
}

// The state built on first need (at a post, a receive or a packet) behaves
// exactly as state built before any traffic: the same completions at the same
// virtual times, the same retransmissions, windows and counters.
TEST(ConnectionMemory, LateStateBehavesAsEarlyState) {
  const Outcome early = run_mixed(true);
  const Outcome late = run_mixed(false);
  // 60 requests, 24 receive completions (the SENDs and WRITE_IMMs), 2 summaries.
  ASSERT_EQ(early.events.size(), 86u);
  ASSERT_EQ(early.events.size(), late.events.size());
  for (size_t i = 0; i < early.events.size(); ++i) EXPECT_EQ(early.events[i], late.events[i]) << "event " << i;
}

}  // namespace
}  // namespace engine_test
