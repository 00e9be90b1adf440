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
                           std::string_view application, std::string_view section_comment)
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
  if (!section_comment.empty()) option(b, kOptComment, section_comment);
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
  return write_captured(interface, time_ns, frame, static_cast<uint32_t>(frame.size()), comment);
}

bool PcapngWriter::write_captured(uint32_t interface, uint64_t time_ns, std::span<const uint8_t> frame,
                                  uint32_t original_length, std::string_view comment) {
  if (!file_ || interface >= interfaces_.size()) {
    counters_.frames_not_written++;
    return false;
  }
  const uint32_t snap = interfaces_[interface].snap_length;
  const size_t captured = std::min<size_t>(frame.size(), snap);
  if (captured < original_length) counters_.frames_truncated++;
  start(block_, kEnhancedPacketBlock);
  u32(block_, interface);
  u32(block_, static_cast<uint32_t>(time_ns >> 32));
  u32(block_, static_cast<uint32_t>(time_ns));
  u32(block_, static_cast<uint32_t>(captured));
  u32(block_, std::max(original_length, static_cast<uint32_t>(captured)));
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

namespace {

uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t get32(const uint8_t* p) { return get16(p) | static_cast<uint32_t>(get16(p + 2)) << 16; }

// Calls f(code, value) for each option in [p, end) until opt_endofopt.
template <typename F>
bool options(const uint8_t* p, const uint8_t* end, F&& f) {
  while (p + 4 <= end) {
    const uint16_t code = get16(p), len = get16(p + 2);
    p += 4;
    if (code == kOptEndOfOptions) return true;
    if (p + len > end) return false;
    f(code, std::string_view(reinterpret_cast<const char*>(p), len));
    p += (len + 3u) & ~3u;
  }
  return true;
}

}  // namespace

std::optional<PcapngFile> read_pcapng(const std::string& path, std::string* error, uint64_t max_bytes) {
  const auto fail = [&](uint64_t at, const std::string& what) -> std::optional<PcapngFile> {
    if (error) *error = path + ": block at byte " + std::to_string(at) + ": " + what;
    return std::nullopt;
  };
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    if (error) *error = path + ": cannot open: " + std::strerror(errno);
    return std::nullopt;
  }
  std::vector<uint8_t> data;
  uint8_t buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) {
    data.insert(data.end(), buf, buf + n);
    if (data.size() > max_bytes) {
      std::fclose(f);
      if (error) *error = path + ": larger than " + std::to_string(max_bytes) + " bytes";
      return std::nullopt;
    }
  }
  std::fclose(f);
  PcapngFile out;
  std::vector<uint64_t> ns_per_tick;  // per interface, from if_tsresol (default microseconds)
  size_t at = 0;
  bool section = false;
  while (at < data.size()) {
    if (data.size() - at < 12) return fail(at, "truncated block header");
    const uint8_t* b = &data[at];
    const uint32_t type = get32(b), length = get32(b + 4);
    if (length < 12 || length % 4 || length > data.size() - at) return fail(at, "bad block length " + std::to_string(length));
    if (get32(b + length - 4) != length) return fail(at, "trailing block length differs");
    const uint8_t* body = b + 8;
    const uint8_t* end = b + length - 4;
    if (type == kSectionHeaderBlock) {
      if (section) return fail(at, "a second section (not supported)");
      if (end - body < 16 || get32(body) != kByteOrderMagic) return fail(at, "not a little-endian section header");
      section = true;
      options(body + 16, end, [&](uint16_t code, std::string_view v) {
        if (code == kOptComment) out.section_comment = v;
        if (code == kOptShbUserApplication) out.application = v;
      });
    } else if (!section) {
      return fail(at, "not a pcapng file (no section header first)");
    } else if (type == kInterfaceDescriptionBlock) {
      if (end - body < 8) return fail(at, "truncated interface description");
      if (get16(body) != kLinkTypeEthernet) return fail(at, "link type " + std::to_string(get16(body)) + " (only Ethernet)");
      PcapngInterface i;
      i.snap_length = get32(body + 4);
      uint64_t tick = 1000;
      options(body + 8, end, [&](uint16_t code, std::string_view v) {
        if (code == kOptIfName) i.name = v;
        if (code == kOptIfTsResolution && v.size() == 1 && !(v[0] & 0x80) && v[0] <= 9) {
          tick = 1;
          for (int k = v[0]; k < 9; ++k) tick *= 10;
        }
      });
      out.interfaces.push_back(std::move(i));
      ns_per_tick.push_back(tick);
    } else if (type == kEnhancedPacketBlock) {
      if (end - body < 20) return fail(at, "truncated packet block");
      PcapngFrame fr;
      fr.interface = get32(body);
      if (fr.interface >= out.interfaces.size()) return fail(at, "packet on undeclared interface " + std::to_string(fr.interface));
      fr.time_ns = ((static_cast<uint64_t>(get32(body + 4)) << 32) | get32(body + 8)) * ns_per_tick[fr.interface];
      const uint32_t captured = get32(body + 12);
      fr.original_length = get32(body + 16);
      const uint8_t* pkt = body + 20;
      if (captured > static_cast<size_t>(end - pkt)) return fail(at, "captured length beyond the block");
      fr.bytes.assign(pkt, pkt + captured);
      options(pkt + ((captured + 3u) & ~3u), end, [&](uint16_t code, std::string_view v) {
        if (code == kOptComment) fr.comment = v;
      });
      out.frames.push_back(std::move(fr));
    }
    at += length;
  }
  if (!section) return fail(0, "empty file (no section header)");
  return out;
}

std::optional<PcapngCounters> merge_pcapng(const std::vector<PcapngSource>& sources, const std::string& path,
                                           std::string_view application, std::string_view section_comment,
                                           std::string* error) {
  std::vector<PcapngInterface> interfaces;
  std::vector<uint32_t> first;  // per source: its first interface's index in the merged file
  struct Ref {
    uint64_t time;
    uint32_t interface;
    const PcapngFrame* frame;
  };
  std::vector<Ref> refs;
  for (const PcapngSource& s : sources) {
    first.push_back(static_cast<uint32_t>(interfaces.size()));
    for (const PcapngInterface& i : s.file->interfaces)
      interfaces.push_back({s.name.empty() ? i.name : s.name + " " + i.name, i.snap_length});
    for (const PcapngFrame& f : s.file->frames) refs.push_back({f.time_ns, first.back() + f.interface, &f});
  }
  if (interfaces.empty()) interfaces.push_back({"none", kDefaultSnapLength});  // a valid file with no frames
  std::stable_sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.time < b.time; });
  PcapngWriter w(path, interfaces, application, section_comment);
  if (!w.ok()) {
    if (error) *error = w.error();
    return std::nullopt;
  }
  for (const Ref& r : refs) w.write_captured(r.interface, r.time, r.frame->bytes, r.frame->original_length, r.frame->comment);
  if (!w.flush()) {
    if (error) *error = path + ": cannot write";
    return std::nullopt;
  }
  return w.counters();
}

}  // namespace metaroce::capture
