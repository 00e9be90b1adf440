// PcapngWriter: the file is valid pcapng block by block (read back here by a
// minimal reader, and by tshark in wireshark.dissector), frames longer than
// the snap length are cut and counted, and an unwritable path is an error.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "metaroce/capture/frame_comment.h"
#include "metaroce/capture/limits.h"
#include "metaroce/capture/pcapng.h"

namespace {

namespace mc = metaroce::capture;

uint32_t u32(const std::vector<uint8_t>& b, size_t at) {
  return b[at] | b[at + 1] << 8 | b[at + 2] << 16 | static_cast<uint32_t>(b[at + 3]) << 24;
}
uint16_t u16(const std::vector<uint8_t>& b, size_t at) { return static_cast<uint16_t>(b[at] | b[at + 1] << 8); }

struct Block {
  uint32_t type;
  size_t at, length;
};

std::vector<Block> blocks(const std::vector<uint8_t>& file) {
  std::vector<Block> out;
  size_t at = 0;
  while (at + 12 <= file.size()) {
    const uint32_t type = u32(file, at);
    const uint32_t total = u32(file, at + 4);
    EXPECT_EQ(total % 4, 0u) << "block at " << at << " is not 32-bit aligned";
    EXPECT_LE(at + total, file.size());
    EXPECT_EQ(u32(file, at + total - 4), total) << "trailing length differs at " << at;
    out.push_back({type, at, total});
    at += total;
  }
  EXPECT_EQ(at, file.size());
  return out;
}

TEST(Pcapng, BlocksFramesCommentsAndSnapLength) {
  const std::string path = ::testing::TempDir() + "/pcapng_test.pcapng";
  std::vector<uint8_t> big(300, 0xAB), small(61, 0x11);
  {
    mc::PcapngWriter w(path, {{"plane0", 65535}, {"plane1 after emulator", 128}}, "test");
    ASSERT_TRUE(w.ok()) << w.error();
    EXPECT_TRUE(w.write(0, 1'000'000'123ull, small));
    EXPECT_TRUE(w.write(1, 2'000'000'000ull, big, "dropped: random loss"));
    EXPECT_FALSE(w.write(2, 0, small)) << "no interface 2";
    EXPECT_EQ(w.counters().frames_written, 2u);
    EXPECT_EQ(w.counters().frames_truncated, 1u);
    EXPECT_EQ(w.counters().frames_not_written, 1u);
  }
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto b = blocks(file);
  ASSERT_EQ(b.size(), 5u);  // SHB, 2 IDB, 2 EPB
  EXPECT_EQ(b[0].type, 0x0A0D0D0Au);
  EXPECT_EQ(u32(file, b[0].at + 8), 0x1A2B3C4Du);
  EXPECT_EQ(b[1].type, 1u);
  EXPECT_EQ(u16(file, b[1].at + 8), mc::kLinkTypeEthernet);
  EXPECT_EQ(u32(file, b[2].at + 12), 128u) << "snap length of interface 1";
  // EPB: interface, timestamp high/low (ns), captured and original length, data.
  const size_t e0 = b[3].at, e1 = b[4].at;
  EXPECT_EQ(b[3].type, 6u);
  EXPECT_EQ(u32(file, e0 + 8), 0u);
  EXPECT_EQ((static_cast<uint64_t>(u32(file, e0 + 12)) << 32) | u32(file, e0 + 16), 1'000'000'123ull);
  EXPECT_EQ(u32(file, e0 + 20), 61u);
  EXPECT_EQ(u32(file, e0 + 24), 61u);
  EXPECT_EQ(file[e0 + 28], 0x11);
  EXPECT_EQ(u32(file, e1 + 8), 1u);
  EXPECT_EQ(u32(file, e1 + 20), 128u) << "cut to the snap length";
  EXPECT_EQ(u32(file, e1 + 24), 300u) << "original length kept";
  // The comment option follows the padded data.
  const size_t opt = e1 + 28 + 128;
  EXPECT_EQ(u16(file, opt), 1u);
  ASSERT_EQ(u16(file, opt + 2), std::strlen("dropped: random loss"));
  EXPECT_EQ(std::string(file.begin() + static_cast<long>(opt + 4), file.begin() + static_cast<long>(opt + 24)),
            "dropped: random loss");
  std::remove(path.c_str());
}

TEST(Pcapng, UnwritablePathAndNoInterfaceAreErrors) {
  mc::PcapngWriter a("/nonexistent-dir/x.pcapng", {{"p", 100}}, "test");
  EXPECT_FALSE(a.ok());
  EXPECT_NE(a.error().find("/nonexistent-dir/x.pcapng"), std::string::npos) << a.error();
  EXPECT_FALSE(a.write(0, 0, std::vector<uint8_t>(10)));
  EXPECT_EQ(a.counters().frames_not_written, 1u);
  mc::PcapngWriter b(::testing::TempDir() + "/none.pcapng", {}, "test");
  EXPECT_FALSE(b.ok());
  EXPECT_NE(b.error().find("interface"), std::string::npos);
}

// read_pcapng gives back what the writer wrote (interfaces, times, lengths,
// bytes, comments, the section's comment); merge_pcapng joins captures of
// several sources into one file in time order, each source's interfaces
// under its name; damaged files are refused with the byte offset.
TEST(Pcapng, ReadBackAndMergeInTimeOrder) {
  const std::string a = ::testing::TempDir() + "/merge_a.pcapng", b = ::testing::TempDir() + "/merge_b.pcapng";
  const std::string out = ::testing::TempDir() + "/merged.pcapng";
  {
    mc::PcapngWriter w(a, {{"plane0", 65535}, {"plane1", 64}}, "daemon a", "window around plane 1 down");
    ASSERT_TRUE(w.ok()) << w.error();
    w.write(0, 100, std::vector<uint8_t>(60, 1), "fabric in");
    w.write(1, 300, std::vector<uint8_t>(200, 2), "dropped by the emulator: link_down, from host 0");
  }
  {
    mc::PcapngWriter w(b, {{"plane0", 65535}}, "daemon b");
    w.write(0, 200, std::vector<uint8_t>(70, 3), "endpoint rx");
    w.write(0, 300, std::vector<uint8_t>(71, 4));
  }
  std::string err;
  const auto fa = mc::read_pcapng(a, &err);
  ASSERT_TRUE(fa) << err;
  EXPECT_EQ(fa->application, "daemon a");
  EXPECT_EQ(fa->section_comment, "window around plane 1 down");
  ASSERT_EQ(fa->interfaces.size(), 2u);
  EXPECT_EQ(fa->interfaces[1].name, "plane1");
  EXPECT_EQ(fa->interfaces[1].snap_length, 64u);
  ASSERT_EQ(fa->frames.size(), 2u);
  EXPECT_EQ(fa->frames[1].time_ns, 300u);
  EXPECT_EQ(fa->frames[1].bytes.size(), 64u);
  EXPECT_EQ(fa->frames[1].original_length, 200u);
  EXPECT_EQ(fa->frames[1].comment, "dropped by the emulator: link_down, from host 0");
  const auto fb = mc::read_pcapng(b, &err);
  ASSERT_TRUE(fb) << err;

  const auto c = mc::merge_pcapng({{"fabric", &*fa}, {"h1", &*fb}}, out, "metarocectl", "merged", &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->frames_written, 4u);
  EXPECT_EQ(c->frames_truncated, 1u);
  const auto m = mc::read_pcapng(out, &err);
  ASSERT_TRUE(m) << err;
  ASSERT_EQ(m->interfaces.size(), 3u);
  EXPECT_EQ(m->interfaces[0].name, "fabric plane0");
  EXPECT_EQ(m->interfaces[2].name, "h1 plane0");
  ASSERT_EQ(m->frames.size(), 4u);
  std::vector<uint64_t> times;
  for (const auto& f : m->frames) times.push_back(f.time_ns);
  EXPECT_EQ(times, (std::vector<uint64_t>{100, 200, 300, 300}));
  EXPECT_EQ(m->frames[1].interface, 2u);
  EXPECT_EQ(m->frames[1].comment, "endpoint rx");
  EXPECT_EQ(m->frames[2].interface, 1u) << "ties keep input order";
  EXPECT_EQ(m->frames[2].original_length, 200u);
  EXPECT_EQ(m->frames[2].bytes.size(), 64u);

  // Damage: a block length that runs past the end.
  std::vector<uint8_t> bytes;
  {
    std::ifstream in(a, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes.resize(bytes.size() - 8);
  {
    std::ofstream o(a, std::ios::binary | std::ios::trunc);
    o.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  EXPECT_FALSE(mc::read_pcapng(a, &err));
  EXPECT_NE(err.find("block at byte"), std::string::npos) << err;
  EXPECT_FALSE(mc::read_pcapng(::testing::TempDir() + "/no-such.pcapng", &err));
  for (const auto& f : {a, b, out}) std::remove(f.c_str());
}

// The names a capture file may have (the daemon checks Capture.Start and
// Capture.Read with this, the scenario engine names its windows by it).
TEST(CaptureLimits, FileNames) {
  EXPECT_TRUE(mc::file_name_ok("01-metaroce-plane-1-down.pcapng"));
  EXPECT_TRUE(mc::file_name_ok("a.pcapng"));
  EXPECT_FALSE(mc::file_name_ok(".pcapng"));
  EXPECT_FALSE(mc::file_name_ok(".hidden.pcapng"));
  EXPECT_FALSE(mc::file_name_ok("../escape.pcapng"));
  EXPECT_FALSE(mc::file_name_ok("x.pcap"));
  EXPECT_FALSE(mc::file_name_ok("sp ace.pcapng"));
  EXPECT_TRUE(mc::file_name_ok(std::string(121, 'a') + ".pcapng"));
  EXPECT_FALSE(mc::file_name_ok(std::string(122, 'a') + ".pcapng"));
}

TEST(FrameComment, PointHostCauseAndMarks) {
  std::array<char, mc::kFrameCommentBytes> buf;
  EXPECT_EQ(mc::frame_comment(mc::CapturePoint::kEndpointRx, 0, {}, buf), "endpoint rx");
  EXPECT_EQ(mc::frame_comment(mc::CapturePoint::kFabricDropped, 1, {"link_down", ""}, buf),
            "dropped by the emulator: link_down, from host 1");
  EXPECT_EQ(mc::frame_comment(mc::CapturePoint::kFabricOut, 0, {"", "ECN CE marked"}, buf),
            "fabric out (after the emulator), to host 0; emulator: ECN CE marked");
  const std::string long_marks(200, 'x');
  const auto cut = mc::frame_comment(mc::CapturePoint::kFabricOut, 65535, {"", long_marks}, buf);
  EXPECT_LT(cut.size(), buf.size());
}

}  // namespace
