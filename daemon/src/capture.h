// Capture.Start/Stop/Get/Read: one bounded capture at a time from this
// daemon's workers into a pcapng file (or a ring of files) in its capture
// directory. The workers only copy matching frames into a tap's ring
// (datapath/capture_tap.h); a writer thread drains the rings into the file,
// moves on to the ring's next file and removes its oldest, stops at the first
// bound, and removes the taps. Control threads and the writer share a mutex;
// workers never take it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "metaroce/capture/pcapng.h"
#include "metaroce/datapath/capture_tap.h"
#include "metaroce/v1/capture.pb.h"

namespace metaroce::daemon {

class DaemonCore;

// The directory captures are written to: $METAROCE_CAPTURE_DIR, or this.
inline constexpr const char* kDefaultCaptureDir = "/var/tmp/metaroce-captures";
std::string capture_dir();

class CaptureManager {
 public:
  explicit CaptureManager(DaemonCore& core) : core_(core) {}
  ~CaptureManager();  // stops a running capture
  grpc::Status start(const v1::CaptureSpec& spec, v1::CaptureInfo* out);
  grpc::Status stop(v1::CaptureInfo* out);
  grpc::Status get(v1::CaptureInfo* out);
  // Streams a file of the capture directory (Capture.Read) to write(chunk),
  // which returns false when the client has gone.
  grpc::Status read(const std::string& file, const std::function<bool(const v1::CaptureChunk&)>& write);

 private:
  struct Attached {
    std::shared_ptr<datapath::CaptureTap> tap;
    bool fabric = false;  // the fabric node's tap, else the endpoint's
  };
  void run();                          // the writer thread
  size_t drain_all();                  // writer thread, under no lock but its own state
  void finish(const std::string& why); // writer thread: detach, last drain, close
  void fill(v1::CaptureInfo* out) const;  // under mu_
  void sum_tap_counts();                   // under mu_: filtered_out_, ring_full_ from every tap
  // Writer thread: closes the ring's current file, opens the next and removes
  // the oldest beyond ring_files. False (and the capture ends) if it cannot open.
  bool next_ring_file();
  static std::string ring_file_name(const std::string& file, uint64_t sequence);  // run-00001.pcapng
  capture::PcapngCounters total_written() const;  // closed ring files and the current one

  DaemonCore& core_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::thread writer_thread_;
  bool running_ = false;
  bool stop_requested_ = false;
  v1::CaptureSpec spec_;
  std::string path_, stop_reason_;
  int64_t started_ns_ = 0, ended_ns_ = 0, realtime_offset_ns_ = 0;
  std::vector<Attached> taps_;
  std::unique_ptr<capture::PcapngWriter> writer_;
  std::vector<capture::PcapngInterface> interfaces_;  // of every file of the capture
  capture::PcapngCounters closed_;                  // ring files already closed (writer thread)
  uint64_t ring_sequence_ = 0;                      // the ring's current file, 1-based (writer thread)
  std::string write_error_;                         // a ring file that could not be opened (writer thread)
  std::vector<std::string> files_;                  // kept files, oldest first (under mu_)
  uint64_t files_removed_ = 0;                      // under mu_
  capture::PcapngCounters written_;                 // total_written(), copied under mu_
  uint64_t filtered_out_ = 0, ring_full_ = 0;       // from the taps, under mu_
};

}  // namespace metaroce::daemon
