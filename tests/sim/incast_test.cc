// Two senders into one receiver through a shared downlink: ECN marks trim the
// windows, the receiver's fair-share hint (capacity / active senders) caps each
// sender, and the two flows share the bottleneck without loss.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "metaroce/emulator/fabric.h"
#include "metaroce/sim/simulator.h"
#include "metaroce/sim/workload.h"

namespace metaroce::sim {
namespace {

constexpr uint32_t kIp[3] = {0x0A000001, 0x0A000002, 0x0A000003};
wire::MacAddr mac(int h) { return {0x02, 0, 0, 0, 0, static_cast<uint8_t>(h + 1)}; }

TEST(Incast, TwoSendersShareTheReceiversDownlinkFairly) {
  constexpr double kRate = 25e9;
  emulator::FabricConfig fc;
  fc.hosts = 3;
  fc.planes = 1;
  fc.host_ips = {kIp[0], kIp[1], kIp[2]};
  fc.port.rate_bps = kRate;
  fc.port.prop_delay_ns = 0;
  fc.port.ecn_threshold_bytes = 64 * 1024;  // the downlink of host 2 is where they meet
  fc.port.queue_limit_bytes = 2u << 20;
  fc.ecmp.rate_bps = 4 * kRate;            // the spine is not the bottleneck
  fc.ecmp.prop_delay_ns = 2000;
  fc.seed = 3;
  emulator::Fabric fabric(fc);
  EmulatedFabric sim_fabric(fabric);
  Simulator sim(sim_fabric);

  std::unique_ptr<transport::Endpoint> ep[3];
  for (int h = 0; h < 3; ++h) {
    transport::EndpointConfig c;
    c.ip = kIp[h];
    c.mac = mac(h);
    c.inbound_capacity_bps = kRate;
    ep[h] = std::make_unique<transport::Endpoint>(c);
    sim.add_host(ep[h].get());
  }
  std::unique_ptr<WriteWorkload> work[2];
  for (int s = 0; s < 2; ++s) {
    transport::ConnectionConfig c;
    c.local_id = 10 + s;
    c.remote_id = 20 + s;
    c.peer_ip = kIp[2];
    c.peer_mac = mac(2);
    c.paths = {{0, static_cast<uint16_t>(50000 + s)}, {0, static_cast<uint16_t>(50100 + s)}};
    c.max_outstanding_per_stream = 16;
    transport::ConnectionConfig r = c;
    std::swap(r.local_id, r.remote_id);
    r.peer_ip = kIp[s];
    r.peer_mac = mac(s);
    std::string err;
    ASSERT_TRUE(ep[s]->create_connection(c, &err)) << err;
    ASSERT_TRUE(ep[2]->create_connection(r, &err)) << err;
    WriteWorkloadConfig wc;
    wc.depth = 16;
    wc.slots = 32;
    wc.seed = static_cast<uint64_t>(s) + 1;
    work[s] = std::make_unique<WriteWorkload>(sim, *ep[s], s, *ep[2], std::vector<uint32_t>{10u + s}, wc);
  }
  sim.on_host_activity([&](int h) {
    if (h < 2) work[h]->on_activity(h);
  });
  work[0]->start();
  work[1]->start();
  const Nanos end = 8'000'000, from = 2'000'000;
  sim.run_until(end);

  double share[2];
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(work[s]->verify_failures(), 0u);
    EXPECT_EQ(work[s]->error_completions(), 0u);
    share[s] = 8.0 * work[s]->bytes_between(from, end) / ((end - from) * 1e-9) / kRate;
    const auto st = ep[s]->stats(10 + s);
    // The receiver's hint: half its capacity for each of two active senders.
    EXPECT_NEAR(st.rate_hint_kbps, kRate / 2 / 1000, kRate / 1000 * 0.01);
  }
  EXPECT_GT(share[0] + share[1], 0.90);  // the bottleneck stays busy
  EXPECT_GT(share[0], 0.40);             // and is shared fairly
  EXPECT_GT(share[1], 0.40);
  const auto c = fabric.counters();
  std::printf("incast: shares %.3f + %.3f of the downlink, %llu ECN marks, queue high water %llu B\n", share[0],
              share[1], static_cast<unsigned long long>(c.total.ecn_marks),
              static_cast<unsigned long long>(fabric.downlink(0, 2).counters().queue_high_water_bytes));
  EXPECT_EQ(c.total.drops_queue_overflow, 0u);  // ECN and the hint keep the queue in bounds
  EXPECT_LT(fabric.downlink(0, 2).counters().queue_high_water_bytes, 2u << 20);
}

}  // namespace
}  // namespace metaroce::sim
