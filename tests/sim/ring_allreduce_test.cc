// The ring all-reduce workload: an iteration is 2(n-1) steps of one chunk per
// position, every byte verified; a position forwards only after its
// predecessor's data has arrived, so one slow hop slows every step of the
// ring; MetaRoCE and RoCEv2 connections alike; a hop's chunk split over its
// connections; bad input refused by name, and errors reported, not hung on.
#include "metaroce/sim/ring_allreduce.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "metaroce/emulator/fabric.h"
#include "metaroce/sim/simulator.h"
#include "metaroce/transport/endpoint.h"

namespace metaroce::sim {
namespace {

uint32_t ip(int h) { return 0x0A000001u + static_cast<uint32_t>(h); }
wire::MacAddr mac(int h) { return {0x02, 0, 0, 0, 0, static_cast<uint8_t>(h + 1)}; }

// Connection ids at an endpoint: its WRITE connections to the successor are
// kSendId + j, the predecessor's land on kRecvId + j.
constexpr uint32_t kSendId = 100, kRecvId = 200;

struct RingOptions {
  int hosts = 4;
  transport::TransportKind transport = transport::TransportKind::kMetaRoCE;
  uint32_t conns_per_hop = 1;
};

// n hosts on a one-plane mesh (100 Gb/s ports, 1 us per hop), each with
// conns_per_hop connections to the next host of the ring.
struct Ring {
  explicit Ring(const RingOptions& o) : n(o.hosts) {
    emulator::FabricConfig fc;
    fc.hosts = static_cast<uint32_t>(n);
    fc.planes = 1;
    for (int h = 0; h < n; ++h) fc.host_ips.push_back(ip(h));
    fc.port.rate_bps = 100e9;
    fc.ecmp.rate_bps = 400e9;
    fc.seed = 5;
    fabric = std::make_unique<emulator::Fabric>(fc);
    sim_fabric = std::make_unique<EmulatedFabric>(*fabric);
    sim = std::make_unique<Simulator>(*sim_fabric);
    for (int h = 0; h < n; ++h) {
      transport::EndpointConfig c;
      c.ip = ip(h);
      c.mac = mac(h);
      owned.push_back(std::make_unique<transport::Endpoint>(c));
      eps.push_back(owned.back().get());
      hosts.push_back(sim->add_host(eps.back()));
    }
    conns.resize(n);
    for (int h = 0; h < n; ++h) {
      const int next = (h + 1) % n;
      for (uint32_t j = 0; j < o.conns_per_hop; ++j) {
        transport::ConnectionConfig c;
        c.transport = o.transport;
        c.local_id = kSendId + j;
        c.remote_id = kRecvId + j;
        c.peer_ip = ip(next);
        c.peer_mac = mac(next);
        const uint16_t port = static_cast<uint16_t>(50000 + 16 * h + 2 * j);
        if (o.transport == transport::TransportKind::kRoCEv2) c.paths = {{0, port}};
        else c.paths = {{0, port}, {0, static_cast<uint16_t>(port + 1)}};
        transport::ConnectionConfig r = c;
        std::swap(r.local_id, r.remote_id);
        r.peer_ip = ip(h);
        r.peer_mac = mac(h);
        std::string err;
        EXPECT_TRUE(eps[h]->create_connection(c, &err)) << err;
        EXPECT_TRUE(eps[next]->create_connection(r, &err)) << err;
        conns[h].push_back(kSendId + j);
      }
    }
  }

  std::unique_ptr<RingAllReduceWorkload> workload(const RingAllReduceConfig& cfg) {
    auto w = std::make_unique<RingAllReduceWorkload>(*sim, eps, hosts, conns, cfg);
    sim->on_host_activity([w = w.get()](int h) { w->on_activity(h); });
    return w;
  }

  int n;
  std::unique_ptr<emulator::Fabric> fabric;
  std::unique_ptr<EmulatedFabric> sim_fabric;
  std::unique_ptr<Simulator> sim;
  std::vector<std::unique_ptr<transport::Endpoint>> owned;
  std::vector<transport::Endpoint*> eps;
  std::vector<int> hosts;
  std::vector<std::vector<uint32_t>> conns;
};

// Every byte of every step arrives; the counters add up to the ring's
// arithmetic: iterations x n positions x 2(n-1) steps x one chunk.
TEST(RingAllReduce, FourHostsCompleteIterationsAndVerifyEveryByte) {
  Ring ring(RingOptions{});
  RingAllReduceConfig cfg;
  cfg.buffer_bytes = 256 * 1024;
  cfg.iterations = 3;
  cfg.record_latency = true;
  auto w = ring.workload(cfg);
  const uint64_t chunk = 64 * 1024, steps = 6;
  EXPECT_EQ(w->chunk_bytes(), chunk);
  EXPECT_EQ(w->steps_per_iteration(), steps);
  EXPECT_EQ(w->buffer_bytes(), chunk + 8 * 9 + 4 * 2 * chunk) << "pattern + 2 slots per position";
  EXPECT_EQ(RingAllReduceWorkload::max_outstanding(ring.conns), 1u);
  w->start();
  ring.sim->run_until(50'000'000);

  EXPECT_TRUE(w->done());
  EXPECT_EQ(w->iterations_completed(), 3u);
  EXPECT_EQ(w->bytes_completed(), 3 * 4 * steps * chunk);
  EXPECT_EQ(w->messages_completed(), 3 * 4 * steps);
  EXPECT_EQ(w->verify_failures(), 0u);
  EXPECT_EQ(w->error_completions(), 0u) << w->first_error();
  EXPECT_TRUE(w->first_error().empty());
  EXPECT_EQ(w->bytes_by_connection(), std::vector<uint64_t>(4, 3 * steps * chunk));
  ASSERT_EQ(w->samples().size(), w->messages_completed());
  EXPECT_EQ(w->samples().back().bytes, w->bytes_completed());
  EXPECT_EQ(w->bytes_between(0, ring.sim->now()), w->bytes_completed());
  ASSERT_EQ(w->latencies().size(), 3u);
  // A step moves 64 KiB over 100 Gb/s ports (5.2 us) and waits for its
  // ACK across three hops each way: more than 6 x 5.2 us, well under 1 ms.
  for (Nanos t : w->latencies()) {
    EXPECT_GT(t, 6 * 5'200);
    EXPECT_LT(t, 1'000'000);
  }
  for (int h = 0; h < 4; ++h) EXPECT_EQ(ring.eps[h]->counters().completion_queue_overflow, 0u);
  std::printf("ring all-reduce, 4 hosts, 256 KiB: iterations of %.1f, %.1f, %.1f us\n", w->latencies()[0] / 1e3,
              w->latencies()[1] / 1e3, w->latencies()[2] / 1e3);
}

// Recorded as it happens: no position posts step k before its own and its
// predecessor's step k-1 completed, nor starts an iteration before every
// position finished the last one.
TEST(RingAllReduce, NoPositionPostsAStepBeforeItsPredecessorFinishedTheLast) {
  Ring ring({.hosts = 5});
  RingAllReduceConfig cfg;
  cfg.buffer_bytes = 100 * 1000;
  cfg.iterations = 3;
  auto w = ring.workload(cfg);
  const uint32_t n = 5, steps = 8;
  std::map<std::tuple<uint32_t, uint64_t, uint32_t>, Nanos> completed;  // (position, iteration, step)
  uint64_t posts = 0, violations = 0;
  w->on_step([&](const RingStepEvent& e) {
    if (e.kind == RingStepEvent::Kind::kCompleted) {
      EXPECT_TRUE(completed.emplace(std::make_tuple(e.position, e.iteration, e.step), e.at).second);
      return;
    }
    ++posts;
    auto done = [&](uint32_t p, uint64_t t, uint32_t k) { return completed.count({p, t, k}) == 1; };
    if (e.step > 0) {
      if (!done(e.position, e.iteration, e.step - 1) || !done((e.position + n - 1) % n, e.iteration, e.step - 1)) {
        ++violations;
        ADD_FAILURE() << "position " << e.position << " posted iteration " << e.iteration << " step " << e.step
                      << " before step " << e.step - 1 << " was complete at it and its predecessor";
      }
    } else if (e.iteration > 0) {
      for (uint32_t p = 0; p < n; ++p)
        if (!done(p, e.iteration - 1, steps - 1)) {
          ++violations;
          ADD_FAILURE() << "position " << e.position << " started iteration " << e.iteration << " before position " << p
                        << " finished the last";
        }
    }
  });
  w->start();
  ring.sim->run_until(50'000'000);
  EXPECT_EQ(w->iterations_completed(), 3u);
  EXPECT_EQ(posts, 3u * n * steps);
  EXPECT_EQ(completed.size(), 3u * n * steps);
  EXPECT_EQ(violations, 0u);
  EXPECT_EQ(w->verify_failures(), 0u);
}

// A slow hop (50 us more on the link from host 1 to host 2) is on the
// critical path of every step: an iteration takes about 2(n-1) x 50 us
// longer, and the delay travels round the ring: position 2 cannot finish its
// last step before position 1 finished the one before, position 3 one step
// after that, and so on.
TEST(RingAllReduce, ASlowHopSlowsEveryStepOfTheRing) {
  constexpr Nanos kExtra = 50'000;
  constexpr uint32_t kSteps = 6;
  auto run = [&](bool slow, std::vector<Nanos>* last_step_done) {
    Ring ring(RingOptions{});
    if (slow) {
      emulator::LinkSelector sel;
      sel.host_a = 1;
      sel.host_b = 2;
      sel.direction = emulator::LinkSelector::Direction::kAToB;
      emulator::LinkPatch patch;
      patch.prop_delay_ns = 1000 + kExtra;
      const auto err = ring.fabric->apply(sel, patch, 0);
      EXPECT_FALSE(err) << *err;
    }
    RingAllReduceConfig cfg;
    cfg.buffer_bytes = 256 * 1024;
    cfg.iterations = 1;
    cfg.record_latency = true;
    auto w = ring.workload(cfg);
    last_step_done->assign(4, 0);
    w->on_step([&](const RingStepEvent& e) {
      if (e.kind == RingStepEvent::Kind::kCompleted && e.step == kSteps - 1) (*last_step_done)[e.position] = e.at;
    });
    w->start();
    ring.sim->run_until(50'000'000);
    EXPECT_EQ(w->iterations_completed(), 1u);
    EXPECT_EQ(w->verify_failures(), 0u);
    EXPECT_EQ(w->error_completions(), 0u) << w->first_error();
    return w->latencies().empty() ? Nanos{0} : w->latencies()[0];
  };
  std::vector<Nanos> fast_done, slow_done;
  const Nanos fast = run(false, &fast_done), slow = run(true, &slow_done);
  std::printf("ring all-reduce, 4 hosts: iteration %.1f us, with one hop 50 us slower %.1f us "
              "(+%.1f, 6 steps x 50 = 300)\n",
              fast / 1e3, slow / 1e3, (slow - fast) / 1e3);
  // Within 10 %: the slower hop also shifts where the ring's frames meet in
  // the links' queues; a ring that did not wait would be off by whole steps.
  EXPECT_NEAR(static_cast<double>(slow - fast), kSteps * kExtra, 0.1 * kSteps * kExtra);
  // Position 1 sends over the slow hop, every step 50 us later than the one
  // before; position 1 + d, d hops downstream, forwards position 1's step
  // S-1-d at its last step, so that finishes (S-d) x 50 us later than
  // without the slow hop. A position that did not wait for its predecessor
  // would not be slowed at all.
  for (uint32_t d = 0; d < 4; ++d) {
    const uint32_t p = (1 + d) % 4;
    EXPECT_NEAR(static_cast<double>(slow_done[p] - fast_done[p]), (kSteps - d) * kExtra, 0.1 * kSteps * kExtra)
        << "position " << p;
  }
}

// The same ring over RoCEv2 queue pairs (one path each).
TEST(RingAllReduce, RunsOverRoceV2) {
  Ring ring({.hosts = 3, .transport = transport::TransportKind::kRoCEv2});
  RingAllReduceConfig cfg;
  cfg.buffer_bytes = 300 * 1024;
  cfg.iterations = 2;
  cfg.seed = 9;
  cfg.record_latency = true;
  auto w = ring.workload(cfg);
  w->start();
  ring.sim->run_until(50'000'000);
  EXPECT_TRUE(w->done());
  EXPECT_EQ(w->iterations_completed(), 2u);
  EXPECT_EQ(w->bytes_completed(), 2u * 3 * 4 * (100 * 1024));
  EXPECT_EQ(w->verify_failures(), 0u);
  EXPECT_EQ(w->error_completions(), 0u) << w->first_error();
  EXPECT_EQ(w->latencies().size(), 2u);
  for (int h = 0; h < 3; ++h) EXPECT_EQ(ring.eps[h]->stats(kSendId).transport, transport::TransportKind::kRoCEv2);
}

// Two connections per hop carry a chunk between them, as evenly as bytes
// allow (1001 = 501 + 500); a share of nothing is not posted at all.
TEST(RingAllReduce, TwoConnectionsPerHopSplitTheChunk) {
  {
    Ring ring({.hosts = 4, .conns_per_hop = 2});
    RingAllReduceConfig cfg;
    cfg.buffer_bytes = 4 * 1001;
    cfg.iterations = 4;
    auto w = ring.workload(cfg);
    EXPECT_EQ(RingAllReduceWorkload::max_outstanding(ring.conns), 2u);
    w->start();
    ring.sim->run_until(50'000'000);
    EXPECT_EQ(w->iterations_completed(), 4u);
    EXPECT_EQ(w->messages_completed(), 4u * 4 * 6 * 2);
    EXPECT_EQ(w->bytes_completed(), 4u * 4 * 6 * 1001);
    EXPECT_EQ(w->verify_failures(), 0u);
    EXPECT_EQ(w->error_completions(), 0u) << w->first_error();
    std::vector<uint64_t> expected;
    for (int p = 0; p < 4; ++p) expected.insert(expected.end(), {4u * 6 * 501, 4u * 6 * 500});
    EXPECT_EQ(w->bytes_by_connection(), expected);
  }
  {
    // Two positions (each the other's successor and predecessor), a 1-byte chunk.
    Ring ring({.hosts = 2, .conns_per_hop = 2});
    RingAllReduceConfig cfg;
    cfg.buffer_bytes = 2;
    cfg.iterations = 5;
    auto w = ring.workload(cfg);
    w->start();
    ring.sim->run_until(50'000'000);
    EXPECT_EQ(w->iterations_completed(), 5u);
    EXPECT_EQ(w->messages_completed(), 5u * 2 * 2);
    EXPECT_EQ(w->bytes_by_connection(), (std::vector<uint64_t>{10, 0, 10, 0}));
    EXPECT_EQ(w->verify_failures(), 0u);
  }
}

// stop() lets what is outstanding finish and posts nothing more.
TEST(RingAllReduce, StopPostsNothingMore) {
  Ring ring(RingOptions{});
  RingAllReduceConfig cfg;
  cfg.buffer_bytes = 64 * 1024;
  auto w = ring.workload(cfg);
  w->start();
  ring.sim->run_until(200'000);
  const uint64_t iterations = w->iterations_completed();
  EXPECT_GT(iterations, 0u);
  EXPECT_FALSE(w->done()) << "unlimited iterations are never done";
  w->stop();
  ring.sim->run_until(400'000);
  const uint64_t messages = w->messages_completed();
  ring.sim->run_until(10'000'000);
  EXPECT_EQ(w->messages_completed(), messages);
  // At most the iteration in flight at stop() ends, if its last step was posted.
  EXPECT_LE(w->iterations_completed(), iterations + 1);
  EXPECT_EQ(w->verify_failures(), 0u);
  EXPECT_EQ(w->error_completions(), 0u);
}

// What the constructor throws for this input, or "(no exception)".
std::string construction_error(Ring& ring, std::vector<transport::Endpoint*> eps, std::vector<int> hosts,
                               std::vector<std::vector<uint32_t>> conns, uint32_t buffer_bytes) {
  RingAllReduceConfig cfg;
  cfg.buffer_bytes = buffer_bytes;
  try {
    RingAllReduceWorkload w(*ring.sim, std::move(eps), std::move(hosts), std::move(conns), cfg);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(RingAllReduce, BadConstructionInputThrowsNamingTheProblem) {
  Ring ring({.hosts = 3});
  auto* a = ring.eps[0];
  auto* b = ring.eps[1];
  auto* c = ring.eps[2];
  const std::vector<uint32_t> one{kSendId};
  EXPECT_EQ(construction_error(ring, {a}, {0}, {one}, 1024),
            "ring_endpoints: a ring needs at least 2 positions, got 1");
  EXPECT_EQ(construction_error(ring, {a, b, c}, {0, 1}, {one, one, one}, 1024),
            "ring_hosts: 2 hosts for 3 ring endpoints");
  EXPECT_EQ(construction_error(ring, {a, b, c}, {0, 1, 2}, {one, one}, 1024),
            "conns: 2 connection lists for 3 ring endpoints");
  EXPECT_EQ(construction_error(ring, {a, b, c}, {0, 1, 2}, {one, {}, one}, 1024),
            "conns[1]: position 1 has no connections");
  EXPECT_EQ(construction_error(ring, {a, b, c}, {0, 1, 2}, {one, one, one}, 0), "buffer_bytes: must be > 0");
  EXPECT_EQ(construction_error(ring, {a, b, c}, {0, 2, 2}, {one, one, one}, 1024),
            "ring_hosts[2]: host 2 is position 1's as well");
  EXPECT_EQ(construction_error(ring, {a, b, a}, {0, 1, 2}, {one, one, one}, 1024),
            "ring_endpoints[2]: the same endpoint as position 0");
  EXPECT_EQ(construction_error(ring, {a, nullptr, c}, {0, 1, 2}, {one, one, one}, 1024), "ring_endpoints[1]: null");
  EXPECT_EQ(construction_error(ring, {a, b, c}, {0, -1, 2}, {one, one, one}, 1024),
            "ring_hosts[1]: host -1 is negative");
  EXPECT_EQ(construction_error(ring, {a, b, c}, {0, 1, 2}, {one, {kSendId, kSendId}, one}, 1024),
            "conns[1]: connection 100 listed twice");
}

// A post the endpoint refuses stops that position at once; the ring waits
// for it, and the workload says where and why instead of hanging silently.
TEST(RingAllReduce, ARefusedPostStopsThePositionAndIsReported) {
  Ring ring(RingOptions{});
  ring.conns[2] = {kSendId + 7};  // no such connection at host 2
  RingAllReduceConfig cfg;
  cfg.buffer_bytes = 64 * 1024;
  cfg.iterations = 2;
  auto w = ring.workload(cfg);
  w->start();
  ring.sim->run_until(50'000'000);
  EXPECT_EQ(w->iterations_completed(), 0u);
  EXPECT_FALSE(w->done());
  EXPECT_EQ(w->error_completions(), 1u);
  EXPECT_EQ(w->first_error(), "position 2 (host 2), iteration 0 step 0, connection 107: post unknown_connection");
  // Position 3 waits for position 2's step 0 at its step 1, position 0 for
  // position 3's step 1 at its step 2, position 1 for position 0's step 2 at
  // its step 3: 1 + 2 + 3 steps of one WRITE, and nothing more.
  EXPECT_EQ(w->messages_completed(), 6u);
  EXPECT_EQ(w->verify_failures(), 0u);
}

// A completion that failed (the receiver no longer knows the connection)
// stops its position the same way.
TEST(RingAllReduce, AFailedCompletionStopsThePositionAndIsReported) {
  Ring ring(RingOptions{});
  ASSERT_TRUE(ring.eps[2]->destroy_connection(kRecvId));  // position 1's WRITEs land nowhere
  RingAllReduceConfig cfg;
  cfg.buffer_bytes = 64 * 1024;
  cfg.iterations = 2;
  auto w = ring.workload(cfg);
  w->start();
  ring.sim->run_until(200'000'000);
  EXPECT_EQ(w->iterations_completed(), 0u);
  EXPECT_GE(w->error_completions(), 1u);
  EXPECT_EQ(w->first_error().rfind("position 1 (host 1), iteration 0 step 0, connection 100: completion ", 0), 0u)
      << w->first_error();
  std::printf("failed completion reported as: %s\n", w->first_error().c_str());
  EXPECT_EQ(w->verify_failures(), 0u);
}

}  // namespace
}  // namespace metaroce::sim
