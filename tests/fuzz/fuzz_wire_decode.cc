// libFuzzer target for every decoder in the wire layer.
//
// Each input is used four ways:
//   1. as a whole Ethernet frame: decode_udp_frame, then decode_packet and
//      rocev2::decode on its UDP payload (what a receiver does with a frame);
//   2. as a bare MetaRoCE UDP payload: decode_packet;
//   3. as a MetaRoCE UDP payload with its CRC32C trailer fixed up, so the fuzzer
//      gets past the checksum and exercises the field checks;
//   4. wrapped in valid Eth/IPv4/UDP headers (dst 4791) with the ICRC sealed,
//      so rocev2::decode's header logic is reached the same way.
// Oracles beyond "no crash / no sanitizer report": an accepted MetaRoCE packet
// must re-encode to identical bytes and have a matching CRC; an accepted frame
// must still be accepted after ECN is re-marked (set_frame_ecn keeps the IPv4
// checksum and the ICRC valid).
//
// Build: tests/fuzz/CMakeLists.txt (clang only). Run:
//   ./fuzz_wire_decode -max_total_time=20 [corpus_dir]
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "metaroce/wire/bytes.h"
#include "metaroce/wire/crc.h"
#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/rocev2.h"
#include "metaroce/wire/udp_frame.h"

namespace w = metaroce::wire;

namespace {

[[noreturn]] void fail() { __builtin_trap(); }

void check_metaroce(std::span<const uint8_t> buf) {
  w::PacketView v;
  if (w::decode_packet(buf, v) != w::DecodeError::kNone) return;
  // Accepted: the CRC must match and the view must re-encode to the same bytes.
  if (buf.size() < w::kCrcBytes) fail();
  const size_t covered = buf.size() - w::kCrcBytes;
  if (w::crc32c(buf.first(covered)) != w::load_be32(buf.data() + covered)) fail();
  if (v.payload.size() != v.common.payload_len.get()) fail();
  if (v.payload.data() < buf.data() || v.payload.data() + v.payload.size() > buf.data() + covered) fail();
  std::vector<uint8_t> again(buf.size());
  const size_t n = w::encode_packet(again, v.common, &v.ext, w::ext_header_bytes(v.opcode), v.payload,
                                    v.ack_blocks);
  if (n != buf.size() || std::memcmp(again.data(), buf.data(), n) != 0) fail();
}

bool rocev2_ok(std::span<const uint8_t> frame, std::span<const uint8_t> udp) {
  w::rocev2::PacketView v;
  if (!w::rocev2::decode(frame, udp, v)) return false;
  if (v.payload.data() < udp.data() || v.payload.data() + v.payload.size() > udp.data() + udp.size()) fail();
  if (v.pad > 3) fail();
  // Headers + payload + pad + ICRC account for the whole UDP payload. (Whether
  // payload + pad is a multiple of 4, as IBA requires, is pinned by the unit test
  // WireRocev2Decode.RejectsBodyNotMultipleOfFour rather than here.)
  const size_t hdrs = sizeof(w::rocev2::Bth) + (v.reth ? sizeof(w::rocev2::Reth) : 0) + (v.imm ? 4 : 0) +
                      (v.aeth ? sizeof(w::rocev2::Aeth) : 0);
  if (hdrs + v.payload.size() + v.pad + w::rocev2::kIcrcBytes != udp.size()) fail();
  if (v.reth.has_value() != w::rocev2::has_reth(v.opcode) || v.imm.has_value() != w::rocev2::has_imm(v.opcode) ||
      v.aeth.has_value() != w::rocev2::has_aeth(v.opcode))
    fail();
  return true;
}

void check_frame(std::vector<uint8_t>& frame) {
  const auto udp = w::decode_udp_frame(frame);
  if (!udp) return;
  if (udp->payload.data() != frame.data() + w::kUdpFrameHeaderBytes) fail();
  check_metaroce(udp->payload);
  const bool roce = rocev2_ok(frame, udp->payload);
  // Re-mark ECN as a switch would: the frame must stay valid, and so must the ICRC.
  const w::Ecn old = w::frame_ecn(frame);
  w::set_frame_ecn(frame, w::Ecn::kCe);
  const auto again = w::decode_udp_frame(frame);
  if (!again || again->ecn != w::Ecn::kCe) fail();
  if (roce && !rocev2_ok(frame, again->payload)) fail();
  w::set_frame_ecn(frame, old);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > w::kMaxFrameBytes + 64) return 0;
  const std::span<const uint8_t> in(data, size);

  // 1. Whole frame (a mutable copy: the ECN oracle edits it).
  std::vector<uint8_t> frame(in.begin(), in.end());
  check_frame(frame);

  // 2. Bare MetaRoCE payload.
  check_metaroce(in);

  // 3. MetaRoCE payload with a valid CRC32C trailer.
  if (size >= w::kCrcBytes) {
    std::vector<uint8_t> sealed(in.begin(), in.end());
    const size_t covered = size - w::kCrcBytes;
    w::store_be32(sealed.data() + covered, w::crc32c(std::span(sealed).first(covered)));
    check_metaroce(sealed);
  }

  // 4. RoCEv2 payload in valid outer headers with the ICRC sealed.
  if (size >= sizeof(w::rocev2::Bth) + w::rocev2::kIcrcBytes) {
    std::vector<uint8_t> f(w::kUdpFrameHeaderBytes + size);
    w::UdpFlow flow;
    flow.src_ip = 0x0A000001;
    flow.dst_ip = 0x0A000002;
    flow.src_port = 0xC000;
    flow.dst_port = w::rocev2::kUdpPort;
    if (w::encode_udp_headers(f, flow, w::Ecn::kEct0, 0, size) != w::kUdpFrameHeaderBytes) fail();
    std::memcpy(f.data() + w::kUdpFrameHeaderBytes, data, size);
    w::rocev2::seal_icrc(f);
    check_frame(f);
  }
  return 0;
}
