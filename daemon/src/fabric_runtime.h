// The fabric role: the emulator as a bump in the wire (datapath::FabricNode)
// between the ports facing each host on each plane, on one worker thread.
// Link changes, timelines and reads go through WorkerChannel commands and are
// applied at the node's own clock, between two iterations.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "metaroce/daemon/config.h"
#include "metaroce/datapath/port.h"
#include "metaroce/datapath/worker.h"
#include "metaroce/emulator/timeline.h"
#include "worker_channel.h"

namespace metaroce::daemon {

struct FabricLinkSnapshot {
  uint32_t plane = 0, ecmp = 0, a = 0, b = 0;  // directed a -> b
  emulator::LinkConfig config;
  emulator::LinkCounters counters;
  bool up = true;
  int64_t p50_ns = 0, p99_ns = 0;
  uint64_t backlog_bytes = 0;
};

struct FabricSnapshot {
  transport::Nanos now = 0;
  std::vector<FabricLinkSnapshot> links;
  emulator::FabricCounters counters;
  datapath::WorkerStats worker;
  std::vector<std::pair<std::string, datapath::PortStats>> ports;  // name, stats
  uint32_t timeline_pending = 0;
};

class FabricRuntime {
 public:
  // own_thread false: the node runs on the endpoint role's worker thread
  // (EndpointRuntime::start with shared_fabric), which must stop first.
  static std::unique_ptr<FabricRuntime> start(const FabricSection& config, const std::string& daemon_name,
                                              std::string* error, bool own_thread = true);
  // The node as a loop for a thread it shares (own_thread false).
  datapath::PolledLoop& loop() { return *node_; }
  WorkerChannel& channel() { return channel_; }
  ~FabricRuntime();

  const FabricSection& config() const { return config_; }
  // Applies a change on the worker at the node's current time. Returns the
  // emulator's validation error ("" on success); *at gets the fabric time.
  std::string apply(const emulator::LinkSelector& sel, const emulator::LinkPatch& patch, transport::Nanos* at,
                    uint32_t* links_changed);
  // Back to the configured base settings, every link up, no timeline.
  std::string reset(transport::Nanos* at, uint32_t* links_changed);
  // Events with at_ns relative to now; *base gets the fabric time they are relative to.
  // *base: the node time the events count from; *base_monotonic (if given):
  // the same instant on CLOCK_MONOTONIC.
  std::string load_timeline(std::vector<emulator::TimelineEvent> events, transport::Nanos* base,
                            transport::Nanos* base_monotonic = nullptr);
  bool snapshot(FabricSnapshot* out);
  // As EndpointRuntime::attach_capture, for the fabric node's points.
  bool attach_capture(std::shared_ptr<datapath::CaptureTap> tap);
  void stop();

 private:
  explicit FabricRuntime(const FabricSection& config) : config_(config) {}
  FabricSection config_;
  std::vector<std::unique_ptr<datapath::Port>> ports_;
  std::unique_ptr<datapath::FabricNode> node_;
  WorkerChannel channel_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  bool started_ = false;
  std::shared_ptr<datapath::CaptureTap> capture_;  // worker thread only
};

}  // namespace metaroce::daemon
