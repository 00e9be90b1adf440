#include "capture.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core.h"
#include "metaroce/capture/limits.h"

namespace metaroce::daemon {
namespace {

using capture::kMaxBytes;
using capture::kMaxDurationNs;
using capture::kMaxPackets;
constexpr uint32_t kMinSnapLength = capture::kMinSnapLength;
constexpr uint32_t kWholeFrame = capture::kMaxSnapLength;  // the largest frame a worker handles
constexpr size_t kRingBytes = 32u << 20;        // per tap: slots x snap length
constexpr auto kDrainPeriod = std::chrono::milliseconds(1);
constexpr size_t kReadChunkBytes = 1u << 20;   // Capture.Read: bytes per message
constexpr size_t kRingNameSuffix = 6;          // "-00001", the least a ring adds to a file's name

int64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
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
  if (!capture::file_name_ok(spec.file()))
    return invalid("spec.file", std::string("must be ") + capture::kFileNameRule + " (it is written in " + capture_dir() + ")");
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
  const bool ring = spec.ring_files() != 0;
  if (ring) {
    if (spec.ring_files() < capture::kMinRingFiles || spec.ring_files() > capture::kMaxRingFiles)
      return invalid("spec.ring_files", "must be 0 (one file) or " + std::to_string(capture::kMinRingFiles) + ".." +
                                            std::to_string(capture::kMaxRingFiles) + " files");
    if (spec.ring_file_bytes() != 0 &&
        (spec.ring_file_bytes() < capture::kMinRingFileBytes || spec.ring_file_bytes() > capture::kMaxRingFileBytes))
      return invalid("spec.ring_file_bytes", "must be 0 (no byte limit per file) or 64 KiB .. 64 GiB");
    if (spec.ring_file_packets() > capture::kMaxRingFilePackets)
      return invalid("spec.ring_file_packets", "at most 100000000 (0: no frame limit per file)");
    if (spec.ring_file_bytes() == 0 && spec.ring_file_packets() == 0)
      return invalid("spec.ring_file_bytes", "a ring needs a size for its files: ring_file_bytes and/or ring_file_packets");
    if (spec.file().size() > capture::kMaxFileNameChars - 2 * kRingNameSuffix)
      return invalid("spec.file", "with a ring, at most " + std::to_string(capture::kMaxFileNameChars - 2 * kRingNameSuffix) +
                                      " characters (each file's name gets -00001, -00002, ...)");
  } else {
    if (spec.ring_file_bytes() != 0) return invalid("spec.ring_file_bytes", "only with ring_files (2..1000); 0 without");
    if (spec.ring_file_packets() != 0) return invalid("spec.ring_file_packets", "only with ring_files (2..1000); 0 without");
    if (spec.max_packets() == 0 && spec.max_bytes() == 0 && spec.max_duration_ns() == 0 && spec.stop_unix_ns() == 0)
      return invalid("spec", "give at least one bound: max_packets, max_bytes, max_duration_ns or stop_unix_ns (or a ring: ring_files)");
  }
  // The window, on the wall clock: near now, stop after start and after now.
  const int64_t mono_now = clock_ns(CLOCK_MONOTONIC), real_now = clock_ns(CLOCK_REALTIME);
  const auto near_now = [&](uint64_t t) {
    return t >= static_cast<uint64_t>(real_now) - kMaxDurationNs && t <= static_cast<uint64_t>(real_now) + kMaxDurationNs;
  };
  if (spec.start_unix_ns() != 0 && !near_now(spec.start_unix_ns()))
    return invalid("spec.start_unix_ns", "must be 0 (from Start) or within 24 h of the daemon's clock (now " +
                                             std::to_string(real_now) + " ns since the Unix epoch)");
  if (spec.stop_unix_ns() != 0) {
    if (!near_now(spec.stop_unix_ns()))
      return invalid("spec.stop_unix_ns", "must be 0 (no end) or within 24 h of the daemon's clock (now " +
                                              std::to_string(real_now) + " ns since the Unix epoch)");
    if (spec.stop_unix_ns() <= std::max<uint64_t>(spec.start_unix_ns(), static_cast<uint64_t>(real_now)))
      return invalid("spec.stop_unix_ns", "must be after start_unix_ns and after now (" + std::to_string(real_now) + ")");
  }

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
  // Whole frames: a slot holds this daemon's largest frame, not the largest any worker could have.
  uint32_t largest = 0;
  if (core_.config().endpoint) largest = std::max(largest, core_.config().endpoint->frame_size);
  if (core_.config().fabric) largest = std::max(largest, core_.config().fabric->frame_size);
  filter.snap_length = spec.snap_length() ? spec.snap_length() : (largest ? std::min(largest, kWholeFrame) : kWholeFrame);
  const int64_t to_monotonic = mono_now - real_now;
  if (spec.start_unix_ns()) filter.from = static_cast<int64_t>(spec.start_unix_ns()) + to_monotonic;
  if (spec.stop_unix_ns()) filter.until = static_cast<int64_t>(spec.stop_unix_ns()) + to_monotonic;
  const size_t slots = std::clamp<size_t>(kRingBytes / filter.snap_length, 256, 65536);

  std::error_code ec;
  std::filesystem::create_directories(capture_dir(), ec);
  const std::string name = ring ? ring_file_name(spec.file(), 1) : spec.file();
  const std::string path = capture_dir() + "/" + name;
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
  interfaces_ = std::move(interfaces);
  closed_ = {};
  ring_sequence_ = 1;
  write_error_.clear();
  files_ = {name};
  files_removed_ = 0;
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
      if (spec_.max_packets() && total_written().frames_written >= spec_.max_packets()) return;
      if (spec_.ring_files() && writer_) {
        const capture::PcapngCounters& c = writer_->counters();
        const bool full = (spec_.ring_file_packets() && c.frames_written >= spec_.ring_file_packets()) ||
                          (spec_.ring_file_bytes() && c.bytes_written >= spec_.ring_file_bytes());
        if (full && !next_ring_file()) writer_.reset();  // the capture ends with the error (run)
      }
      if (!writer_) {
        closed_.frames_not_written++;
        return;
      }
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
    const capture::PcapngCounters c = total_written();
    const int64_t elapsed = clock_ns(CLOCK_MONOTONIC) - started_ns_;
    lock.lock();
    written_ = c;
    sum_tap_counts();
    if (!why.empty()) break;
    if (!write_error_.empty()) why = "write error: " + write_error_;
    else if (spec_.max_packets() && c.frames_written >= spec_.max_packets()) why = "max_packets";
    else if (spec_.max_bytes() && c.bytes_written >= spec_.max_bytes()) why = "max_bytes";
    else if (spec_.max_duration_ns() && static_cast<uint64_t>(elapsed) >= spec_.max_duration_ns()) why = "max_duration";
    else if (spec_.stop_unix_ns() && started_ns_ + elapsed + realtime_offset_ns_ > static_cast<int64_t>(spec_.stop_unix_ns()))
      why = "window_end";  // the taps kept nothing after it; the last drain is in finish()
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
  const int64_t taps_off = clock_ns(CLOCK_MONOTONIC);
  drain_all();  // what the workers kept before the taps came off
  if (writer_) writer_->flush();
  std::lock_guard<std::mutex> lock(mu_);
  written_ = total_written();
  sum_tap_counts();
  stop_reason_ = why;
  ended_ns_ = taps_off;
  writer_.reset();  // closes the file
  taps_.clear();    // a runtime whose worker did not answer still holds its tap
  running_ = false;
}

std::string CaptureManager::ring_file_name(const std::string& f, uint64_t sequence) {
  char number[24];
  std::snprintf(number, sizeof number, "-%05llu", static_cast<unsigned long long>(sequence));
  return f.substr(0, f.size() - 7) + number + ".pcapng";  // file_name_ok: it ends in .pcapng
}

capture::PcapngCounters CaptureManager::total_written() const {
  capture::PcapngCounters t = closed_;
  if (writer_) {
    const capture::PcapngCounters& c = writer_->counters();
    t.frames_written += c.frames_written;
    t.bytes_written += c.bytes_written;
    t.frames_truncated += c.frames_truncated;
    t.frames_not_written += c.frames_not_written;
  }
  return t;
}

bool CaptureManager::next_ring_file() {
  writer_->flush();
  const capture::PcapngCounters c = writer_->counters();
  closed_.frames_written += c.frames_written;
  closed_.bytes_written += c.bytes_written;
  closed_.frames_truncated += c.frames_truncated;
  closed_.frames_not_written += c.frames_not_written;
  writer_.reset();  // closes the file
  const std::string name = ring_file_name(spec_.file(), ++ring_sequence_);
  const std::string path = capture_dir() + "/" + name;
  auto next = std::make_unique<capture::PcapngWriter>(path, interfaces_, "metaroced " + core_.config().name);
  std::vector<std::string> removed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!next->ok()) {
      write_error_ = next->error();
      return false;
    }
    path_ = path;
    files_.push_back(name);
    while (files_.size() > spec_.ring_files()) {
      removed.push_back(files_.front());
      files_.erase(files_.begin());
      files_removed_++;
    }
  }
  writer_ = std::move(next);
  std::error_code ec;
  for (const std::string& old : removed) std::filesystem::remove(capture_dir() + "/" + old, ec);
  return true;
}

grpc::Status CaptureManager::read(const std::string& file, const std::function<bool(const v1::CaptureChunk&)>& write) {
  if (!capture::file_name_ok(file))
    return invalid("file", std::string("must be ") + capture::kFileNameRule + " (a file of " + capture_dir() + ")");
  const std::string path = capture_dir() + "/" + file;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ && path == path_)
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "file: " + file + " is being written by the running capture; stop it first (or read a closed ring file)"};
  }
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!in || ec) return {grpc::StatusCode::NOT_FOUND, "file: no capture file " + file + " in " + capture_dir()};
  v1::CaptureChunk chunk;
  chunk.set_file_bytes(size);
  std::string buf(kReadChunkBytes, '\0');
  uint64_t offset = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<size_t>(in.gcount());
    if (n == 0) break;
    chunk.set_offset(offset);
    chunk.set_data(buf.data(), n);
    if (!write(chunk)) return grpc::Status::OK;  // the client went away
    offset += n;
  }
  if (in.bad()) return {grpc::StatusCode::DATA_LOSS, "file: reading " + file + " failed after " + std::to_string(offset) + " bytes"};
  return grpc::Status::OK;
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
  for (const std::string& f : files_) out->add_files(f);
  out->set_files_removed(files_removed_);
  if (started_ns_) out->set_started_unix_ns(static_cast<uint64_t>(started_ns_ + realtime_offset_ns_));
  if (started_ns_ && !running_) out->set_ended_unix_ns(static_cast<uint64_t>(ended_ns_ + realtime_offset_ns_));
}

}  // namespace metaroce::daemon
