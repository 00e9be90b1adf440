// pcapng writer (draft-ietf-opsawg-pcapng): one Section Header Block, one
// Interface Description Block per port (Ethernet, nanosecond timestamps, a
// snap length), then one Enhanced Packet Block per frame, optionally with a
// comment (opt_comment) such as the emulator's verdict on that frame.
//
// Blocks are written little-endian (the byte-order magic tells readers so).
// Writing never throws and never blocks the caller on a full disk forever: a
// failed write is counted (frames_not_written) and later frames still try.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace metaroce::capture {

inline constexpr uint16_t kLinkTypeEthernet = 1;
inline constexpr uint32_t kDefaultSnapLength = 65535;

struct PcapngInterface {
  std::string name;          // if_name, e.g. "plane0" or "h0/plane1 after emulator"
  uint32_t snap_length = kDefaultSnapLength;  // frames are cut to this many bytes
};

struct PcapngCounters {
  uint64_t frames_written = 0;
  uint64_t bytes_written = 0;       // file bytes, headers included
  uint64_t frames_truncated = 0;    // longer than their interface's snap length
  uint64_t frames_not_written = 0;  // the file refused them (disk full, I/O error)
};

class PcapngWriter {
 public:
  // Opens (truncates) path and writes the section header (with the
  // application's name and, if given, a comment on the whole file) and one
  // interface description per entry. ok() is false, and error() says why,
  // when the file cannot be opened or the interface list is empty.
  PcapngWriter(const std::string& path, std::vector<PcapngInterface> interfaces, std::string_view application,
               std::string_view section_comment = {});
  ~PcapngWriter();
  PcapngWriter(const PcapngWriter&) = delete;
  PcapngWriter& operator=(const PcapngWriter&) = delete;

  bool ok() const { return file_ != nullptr && error_.empty(); }
  const std::string& error() const { return error_; }

  // One frame on interface `interface` (index into the constructor's list) at
  // time_ns (nanoseconds since the Unix epoch, or any origin the reader is told
  // about). comment may be empty. Returns false if the frame was not written.
  bool write(uint32_t interface, uint64_t time_ns, std::span<const uint8_t> frame, std::string_view comment = {});
  // The same for a frame already cut: frame holds what was kept of a frame of
  // original_length bytes (counted as truncated when shorter).
  bool write_captured(uint32_t interface, uint64_t time_ns, std::span<const uint8_t> frame, uint32_t original_length,
                      std::string_view comment = {});
  bool flush();

  const PcapngCounters& counters() const { return counters_; }

 private:
  bool put(const std::vector<uint8_t>& block);

  std::FILE* file_ = nullptr;
  std::string error_;
  std::vector<PcapngInterface> interfaces_;
  std::vector<uint8_t> block_;  // reused per frame: no allocation once grown
  PcapngCounters counters_;
};

// A pcapng file read back: what PcapngWriter writes (one little-endian
// section, Ethernet interfaces with their names and snap lengths, enhanced
// packet blocks with comments); other block types are skipped. For merging
// captures (a scenario's window from several daemons) and for tests.
struct PcapngFrame {
  uint32_t interface = 0;
  uint64_t time_ns = 0;             // in the interface's resolution, converted to ns
  uint32_t original_length = 0;
  std::vector<uint8_t> bytes;       // as captured (at most the snap length)
  std::string comment;
};
struct PcapngFile {
  std::string application, section_comment;
  std::vector<PcapngInterface> interfaces;
  std::vector<PcapngFrame> frames;  // in file order
};
// nullopt and *error ("PATH: block at byte N: ...") when the file is not such a
// pcapng file, or holds more than max_bytes.
std::optional<PcapngFile> read_pcapng(const std::string& path, std::string* error, uint64_t max_bytes = 1ull << 30);

// Several captures as one file, every frame in time order (ties in input
// order): each input's interfaces under its source's name ("fabric plane1",
// "h0 plane1"), the frames' bytes, lengths and comments as they were.
// nullopt and *error when the file cannot be written; else its counters.
struct PcapngSource {
  std::string name;                 // "fabric", "h0"
  const PcapngFile* file = nullptr;
};
std::optional<PcapngCounters> merge_pcapng(const std::vector<PcapngSource>& sources, const std::string& path,
                                           std::string_view application, std::string_view section_comment,
                                           std::string* error);

}  // namespace metaroce::capture
