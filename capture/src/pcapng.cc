#include "metaroce/capture/pcapng.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace metaroce::capture {
namespace {

constexpr uint32_t kSectionHeaderBlock = 0x0A0D0D0A;
constexpr uint32_t kInterfaceDescriptionBlock = 0x00000001;
constexpr uint32_t kEnhancedPacketBlock = 0x00000006;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kOptEndOfOptions = 0;
constexpr uint16_t kOptComment = 1;
constexpr uint16_t kOptShbUserApplication = 4;
constexpr uint16_t kOptIfName = 2;
constexpr uint16_t kOptIfTsResolution = 9;  // one byte: 9 = 10^-9 s (nanoseconds)
// An option's value is at most 65535 bytes (its length field is 16 bits).
constexpr size_t kMaxOptionBytes = 0xFFFF;

void u16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v));
  b.push_back(static_cast<uint8_t>(v >> 8));
}
void u32(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void pad4(std::vector<uint8_t>& b) {
  while (b.size() % 4) b.push_back(0);
}
void option(std::vector<uint8_t>& b, uint16_t code, std::span<const uint8_t> value) {
  const size_t n = std::min(value.size(), kMaxOptionBytes);
  u16(b, code);
  u16(b, static_cast<uint16_t>(n));
  b.insert(b.end(), value.begin(), value.begin() + static_cast<std::ptrdiff_t>(n));
  pad4(b);
}
void option(std::vector<uint8_t>& b, uint16_t code, std::string_view value) {
  option(b, code, {reinterpret_cast<const uint8_t*>(value.data()), value.size()});
}
// Starts a block (type, length to be patched); finish() appends the trailing
// length and patches the leading one.
void start(std::vector<uint8_t>& b, uint32_t type) {
  b.clear();
  u32(b, type);
  u32(b, 0);
}
void finish(std::vector<uint8_t>& b) {
  const uint32_t total = static_cast<uint32_t>(b.size() + 4);
  u32(b, total);
  for (int i = 0; i < 4; ++i) b[4 + i] = static_cast<uint8_t>(total >> (8 * i));
}

}  // namespace

PcapngWriter::PcapngWriter(const std::string& path, std::vector<PcapngInterface> interfaces,
                           std::string_view application)
    : interfaces_(std::move(interfaces)) {
  if (interfaces_.empty()) {
    error_ = "pcapng: at least one interface is required";
    return;
  }
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) {
    error_ = "pcapng: cannot open " + path + ": " + std::strerror(errno);
    return;
  }
  std::vector<uint8_t> b;
  start(b, kSectionHeaderBlock);
  u32(b, kByteOrderMagic);
  u16(b, 1);  // major version
  u16(b, 0);  // minor version
  u32(b, 0xFFFFFFFF);  // section length: not given
  u32(b, 0xFFFFFFFF);
  if (!application.empty()) option(b, kOptShbUserApplication, application);
  u16(b, kOptEndOfOptions);
  u16(b, 0);
  finish(b);
  bool ok = put(b);
  for (const PcapngInterface& i : interfaces_) {
    start(b, kInterfaceDescriptionBlock);
    u16(b, kLinkTypeEthernet);
    u16(b, 0);  // reserved
    u32(b, i.snap_length);
    if (!i.name.empty()) option(b, kOptIfName, i.name);
    const uint8_t nanoseconds = 9;
    option(b, kOptIfTsResolution, std::span<const uint8_t>(&nanoseconds, 1));
    u16(b, kOptEndOfOptions);
    u16(b, 0);
    finish(b);
    ok = put(b) && ok;
  }
  if (!ok) error_ = "pcapng: cannot write the file header to " + path;
}

PcapngWriter::~PcapngWriter() {
  if (file_) std::fclose(file_);
}

bool PcapngWriter::put(const std::vector<uint8_t>& block) {
  if (!file_) return false;
  if (std::fwrite(block.data(), 1, block.size(), file_) != block.size()) return false;
  counters_.bytes_written += block.size();
  return true;
}

bool PcapngWriter::write(uint32_t interface, uint64_t time_ns, std::span<const uint8_t> frame,
                         std::string_view comment) {
  if (!file_ || interface >= interfaces_.size()) {
    counters_.frames_not_written++;
    return false;
  }
  const uint32_t snap = interfaces_[interface].snap_length;
  const size_t captured = std::min<size_t>(frame.size(), snap);
  if (captured < frame.size()) counters_.frames_truncated++;
  start(block_, kEnhancedPacketBlock);
  u32(block_, interface);
  u32(block_, static_cast<uint32_t>(time_ns >> 32));
  u32(block_, static_cast<uint32_t>(time_ns));
  u32(block_, static_cast<uint32_t>(captured));
  u32(block_, static_cast<uint32_t>(frame.size()));
  block_.insert(block_.end(), frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(captured));
  pad4(block_);
  if (!comment.empty()) {
    option(block_, kOptComment, comment);
    u16(block_, kOptEndOfOptions);
    u16(block_, 0);
  }
  finish(block_);
  if (!put(block_)) {
    counters_.frames_not_written++;
    return false;
  }
  counters_.frames_written++;
  return true;
}

bool PcapngWriter::flush() { return file_ && std::fflush(file_) == 0; }

}  // namespace metaroce::capture
