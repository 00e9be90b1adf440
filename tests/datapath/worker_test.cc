// EndpointWorker against a port that behaves like AF_XDP in copy mode: frames
// wait in the TX ring until flush() kicks the kernel, and a kick while the
// device is busy moves nothing. A plane whose ring filled must not go silent
// for good (seen as a plane carrying nothing in DaemonE2E under CPU load).
#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "metaroce/datapath/port.h"
#include "metaroce/datapath/worker.h"
#include "metaroce/transport/endpoint.h"

namespace metaroce::datapath {
namespace {

class KickedRingPort final : public Port {
 public:
  explicit KickedRingPort(size_t ring, int busy_kicks) : ring_(ring), busy_kicks_(busy_kicks) {}
  const char* kind() const override { return "kicked-ring"; }
  const std::string& name() const override { return name_; }
  size_t rx_burst(std::span<RxFrame>) override { return 0; }
  size_t tx_burst(std::span<const std::span<const uint8_t>> frames) override {
    size_t taken = 0;
    while (taken < frames.size() && queued_.size() < ring_) queued_.emplace_back(frames[taken++].size());
    return taken;
  }
  // A kick sends everything queued, except that the first kicks after the
  // ring fills find the device busy (EAGAIN) and send nothing.
  void flush() override {
    ++kicks_;
    if (queued_.size() == ring_ && busy_kicks_ > 0) {
      --busy_kicks_;
      return;
    }
    sent_ += queued_.size();
    queued_.clear();
  }
  bool tx_ready() const override { return queued_.size() < ring_; }
  PortStats stats() const override { return {}; }
  size_t sent() const { return sent_; }
  size_t kicks() const { return kicks_; }

 private:
  std::string name_ = "plane0";
  size_t ring_;
  int busy_kicks_;
  std::deque<size_t> queued_;
  size_t sent_ = 0, kicks_ = 0;
};

TEST(EndpointWorker, AFullUnkickedTxRingIsKickedAgainAndThePlaneKeepsSending) {
  transport::EndpointConfig ec;
  ec.ip = 0x0A000001;
  ec.mac = {0x02, 0, 0, 0, 0, 1};
  transport::Endpoint ep(ec);
  transport::ConnectionConfig cc;
  cc.local_id = 1;
  cc.remote_id = 2;
  cc.peer_ip = 0x0A000002;
  cc.peer_mac = {0x02, 0, 0, 0, 0, 2};
  cc.paths = {{0, 49152}};
  cc.mtu_payload = 1024;
  std::string err;
  ASSERT_TRUE(ep.create_connection(cc, &err)) << err;
  std::vector<uint8_t> src(1 << 20, 0x5a);
  const uint32_t lkey = *ep.register_memory(src.data(), src.size(), transport::kAccessLocalWrite);
  transport::WorkRequest wr;
  wr.verb = transport::Verb::kWrite;
  wr.local_addr = reinterpret_cast<uint64_t>(src.data());
  wr.lkey = lkey;
  wr.length = static_cast<uint32_t>(src.size());
  wr.remote_addr = 0x1000;
  wr.rkey = 0x42;
  ASSERT_EQ(ep.post(1, 0, wr), transport::PostError::kOk);

  KickedRingPort port(/*ring=*/8, /*busy_kicks=*/1);
  EndpointWorker worker(ep, {&port});
  // Virtual time, 1 us a step: well inside the first RTO, so every frame the
  // port sends is new data the engine produced because the port was ready.
  for (int i = 0; i < 50; ++i) worker.step(1'000'000 + i * 1'000);
  EXPECT_GT(port.sent(), 8u) << "the ring filled, its first kick found the device busy, and nothing kicked it again ("
                             << port.kicks() << " kicks)";
}

}  // namespace
}  // namespace metaroce::datapath
