#include "capture.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core.h"

namespace metaroce::daemon {
namespace {

constexpr uint64_t kMaxPackets = 100'000'000;
constexpr uint64_t kMaxBytes = 64ull << 30;
constexpr uint64_t kMaxDurationNs = 24ull * 3600 * 1'000'000'000;
constexpr uint32_t kMinSnapLength = 64;
constexpr uint32_t kWholeFrame = 9216;          // the largest frame a worker handles
constexpr size_t kRingBytes = 32u << 20;        // per tap: slots x snap length
constexpr auto kDrainPeriod = std::chrono::milliseconds(1);

int64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool file_name_ok(const std::string& f) {
  if (f.empty() || f.size() > 128 || f[0] == '.' || f.size() < 8 || f.substr(f.size() - 7) != ".pcapng") return false;
  return std::all_of(f.begin(), f.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

datapath::CapturePoint point_of(v1::CapturePoint p) {
  switch (p) {
    case v1::CAPTURE_POINT_ENDPOINT_RX: return datapath::CapturePoint::kEndpointRx;
    case v1::CAPTURE_POINT_ENDPOINT_TX: return datapath::CapturePoint::kEndpointTx;
    case v1::CAPTURE_POINT_FABRIC_IN: return datapath::CapturePoint::kFabricIn;
    case v1::CAPTURE_POINT_FABRIC_OUT: return datapath::CapturePoint::kFabricOut;
    default: return datapath::CapturePoint::kFabricDropped;
  }
}

bool fabric_point(v1::CapturePoint p) { return p >= v1::CAPTURE_POINT_FABRIC_IN; }

}  // namespace

std::string capture_dir() {
  const char* env = std::getenv("METAROCE_CAPTURE_DIR");
  return env && *env ? env : kDefaultCaptureDir;
}

CaptureManager::~CaptureManager() {
  v1::CaptureInfo ignored;
  stop(&ignored);
}

grpc::Status CaptureManager::start(const v1::CaptureSpec& spec, v1::CaptureInfo* out) {
  // Validation: every refusal names the field and what is allowed.
  if (!file_name_ok(spec.file()))
    return invalid("spec.file", "must be a file name of 1-128 letters, digits, '.', '_' or '-', not starting with '.'"
                                " and ending in .pcapng (it is written in " + capture_dir() + ")");
  EndpointRuntime* ep = core_.endpoint();
  FabricRuntime* fab = core_.fabric();
  const uint32_t planes = std::max(ep ? ep->planes() : 0u, fab ? fab->config().planes : 0u);
  for (int i = 0; i < spec.planes_size(); ++i)
    if (spec.planes(i) >= planes)
      return invalid("spec.planes[" + std::to_string(i) + "]",
                     std::to_string(spec.planes(i)) + " is not a plane of this daemon (0.." + std::to_string(planes - 1) + ")");
  for (int i = 0; i < spec.points_size(); ++i) {
    const auto p = static_cast<v1::CapturePoint>(spec.points(i));
    if (p == v1::CAPTURE_POINT_UNSPECIFIED || !v1::CapturePoint_IsValid(p))
      return invalid("spec.points[" + std::to_string(i) + "]", "must be one of ENDPOINT_RX, ENDPOINT_TX, FABRIC_IN, FABRIC_OUT, FABRIC_DROPPED");
    if (fabric_point(p) ? !fab : !ep)
      return invalid("spec.points[" + std::to_string(i) + "]",
                     std::string(v1::CapturePoint_Name(p)) + " needs the " + (fabric_point(p) ? "fabric" : "endpoint") +
                         " role, which this daemon does not have");
  }
  if (spec.udp_port() > 65535) return invalid("spec.udp_port", "must be 0 (any) or 1..65535");
  if (spec.snap_length() != 0 && (spec.snap_length() < kMinSnapLength || spec.snap_length() > kWholeFrame))
    return invalid("spec.snap_length", "must be 0 (whole frames) or " + std::to_string(kMinSnapLength) + ".." +
                                           std::to_string(kWholeFrame) + " bytes");
  if (spec.max_packets() > kMaxPackets) return invalid("spec.max_packets", "at most 100000000 (0: no limit)");
  if (spec.max_bytes() > kMaxBytes) return invalid("spec.max_bytes", "at most 64 GiB (0: no limit)");
  if (spec.max_duration_ns() > kMaxDurationNs) return invalid("spec.max_duration_ns", "at most 24 h (0: no limit)");
  if (spec.max_packets() == 0 && spec.max_bytes() == 0 && spec.max_duration_ns() == 0)
    return invalid("spec", "give at least one bound: max_packets, max_bytes or max_duration_ns");

  std::unique_lock<std::mutex> lock(mu_);
  if (running_) return {grpc::StatusCode::FAILED_PRECONDITION, "capture: one is running (" + path_ + "); stop it first"};
  if (writer_thread_.joinable()) writer_thread_.join();

  datapath::CaptureFilter filter;
  if (spec.planes_size() > 0) {
    filter.planes = 0;
    for (uint32_t p : spec.planes()) filter.planes |= 1ull << p;
  }
  if (spec.points_size() > 0) {
    filter.endpoint_rx = filter.endpoint_tx = filter.fabric_in = filter.fabric_out = filter.fabric_dropped = false;
    for (int i = 0; i < spec.points_size(); ++i) {
      switch (point_of(static_cast<v1::CapturePoint>(spec.points(i)))) {
        case datapath::CapturePoint::kEndpointRx: filter.endpoint_rx = true; break;
        case datapath::CapturePoint::kEndpointTx: filter.endpoint_tx = true; break;
        case datapath::CapturePoint::kFabricIn: filter.fabric_in = true; break;
        case datapath::CapturePoint::kFabricOut: filter.fabric_out = true; break;
        case datapath::CapturePoint::kFabricDropped: filter.fabric_dropped = true; break;
      }
    }
  }
  filter.udp_port = static_cast<uint16_t>(spec.udp_port());
  filter.connection = spec.connection();
  filter.snap_length = spec.snap_length() ? spec.snap_length() : kWholeFrame;
  const size_t slots = std::clamp<size_t>(kRingBytes / filter.snap_length, 256, 65536);

  std::error_code ec;
  std::filesystem::create_directories(capture_dir(), ec);
  const std::string path = capture_dir() + "/" + spec.file();
  std::vector<capture::PcapngInterface> interfaces;
  for (uint32_t p = 0; p < planes; ++p)
    interfaces.push_back({"plane" + std::to_string(p), spec.snap_length() ? spec.snap_length() : 65535});
  auto writer = std::make_unique<capture::PcapngWriter>(path, interfaces, "metaroced " + core_.config().name);
  if (!writer->ok()) return {grpc::StatusCode::FAILED_PRECONDITION, "spec.file: " + writer->error()};

  std::vector<Attached> taps;
  const bool wants_endpoint = filter.endpoint_rx || filter.endpoint_tx;
  const bool wants_fabric = filter.fabric_in || filter.fabric_out || filter.fabric_dropped;
  if (ep && wants_endpoint) taps.push_back({std::make_shared<datapath::CaptureTap>(filter, slots), false});
  if (fab && wants_fabric) taps.push_back({std::make_shared<datapath::CaptureTap>(filter, slots), true});
  for (Attached& a : taps) {
    const bool ok = a.fabric ? fab->attach_capture(a.tap) : ep->attach_capture(a.tap);
    if (!ok) {
      for (Attached& b : taps) (b.fabric ? fab->attach_capture(nullptr) : ep->attach_capture(nullptr));
      return {grpc::StatusCode::UNAVAILABLE, "capture: the worker did not answer; nothing is captured"};
    }
  }
  spec_ = spec;
  path_ = path;
  stop_reason_.clear();
  taps_ = std::move(taps);
  writer_ = std::move(writer);
  written_ = {};
  filtered_out_ = ring_full_ = 0;
  started_ns_ = clock_ns(CLOCK_MONOTONIC);
  ended_ns_ = 0;
  realtime_offset_ns_ = clock_ns(CLOCK_REALTIME) - started_ns_;
  running_ = true;
  stop_requested_ = false;
  writer_thread_ = std::thread([this] { run(); });
  fill(out);
  return grpc::Status::OK;
}

grpc::Status CaptureManager::stop(v1::CaptureInfo* out) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  if (writer_thread_.joinable()) writer_thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  fill(out);
  return grpc::Status::OK;
}

grpc::Status CaptureManager::get(v1::CaptureInfo* out) {
  std::lock_guard<std::mutex> lock(mu_);
  fill(out);
  return grpc::Status::OK;
}

size_t CaptureManager::drain_all() {
  size_t n = 0;
  std::array<char, datapath::kCaptureCommentBytes> comment;
  for (Attached& a : taps_)
    n += a.tap->drain([&](const datapath::CaptureRecord& r) {
      // Past max_packets the frames are after the capture's end, not lost.
      if (spec_.max_packets() && writer_->counters().frames_written >= spec_.max_packets()) return;
      writer_->write(r.plane, static_cast<uint64_t>(r.time + realtime_offset_ns_), r.bytes,
                     datapath::capture_comment(r, comment));
    });
  return n;
}

void CaptureManager::run() {
  std::unique_lock<std::mutex> lock(mu_);
  std::string why;
  while (why.empty()) {
    wake_.wait_for(lock, kDrainPeriod, [this] { return stop_requested_; });
    if (stop_requested_) why = "stopped";
    // Writing happens outside the lock: Get and Stop stay responsive on a slow disk.
    lock.unlock();
    drain_all();
    const capture::PcapngCounters c = writer_->counters();
    const int64_t elapsed = clock_ns(CLOCK_MONOTONIC) - started_ns_;
    lock.lock();
    written_ = c;
    sum_tap_counts();
    if (!why.empty()) break;
    if (spec_.max_packets() && c.frames_written >= spec_.max_packets()) why = "max_packets";
    else if (spec_.max_bytes() && c.bytes_written >= spec_.max_bytes()) why = "max_bytes";
    else if (spec_.max_duration_ns() && static_cast<uint64_t>(elapsed) >= spec_.max_duration_ns()) why = "max_duration";
  }
  lock.unlock();
  finish(why);
}

void CaptureManager::finish(const std::string& why) {
  EndpointRuntime* ep = core_.endpoint();
  FabricRuntime* fab = core_.fabric();
  for (const Attached& a : taps_) {
    if (a.fabric && fab) fab->attach_capture(nullptr);
    if (!a.fabric && ep) ep->attach_capture(nullptr);
  }
  drain_all();  // what the workers kept before the taps came off
  writer_->flush();
  std::lock_guard<std::mutex> lock(mu_);
  written_ = writer_->counters();
  sum_tap_counts();
  stop_reason_ = why;
  ended_ns_ = clock_ns(CLOCK_MONOTONIC);
  writer_.reset();  // closes the file
  taps_.clear();    // a runtime whose worker did not answer still holds its tap
  running_ = false;
}

void CaptureManager::sum_tap_counts() {
  filtered_out_ = ring_full_ = 0;
  for (const Attached& a : taps_) {
    const datapath::CaptureCounters c = a.tap->counters();
    filtered_out_ += c.filtered_out;
    ring_full_ += c.ring_full;
  }
}

void CaptureManager::fill(v1::CaptureInfo* out) const {
  *out->mutable_spec() = spec_;
  out->set_path(path_);
  out->set_running(running_);
  out->set_stop_reason(stop_reason_);
  const int64_t end = running_ ? clock_ns(CLOCK_MONOTONIC) : ended_ns_;
  out->set_elapsed_s(started_ns_ ? static_cast<double>(end - started_ns_) / 1e9 : 0.0);
  out->set_packets_written(written_.frames_written);
  out->set_bytes_written(written_.bytes_written);
  out->set_packets_truncated(written_.frames_truncated);
  out->set_packets_filtered_out(filtered_out_);
  out->set_packets_not_written(ring_full_ + written_.frames_not_written);
}

}  // namespace metaroce::daemon
