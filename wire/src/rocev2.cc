#include "metaroce/wire/rocev2.h"

#include <cstring>

#include "metaroce/wire/crc.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::wire::rocev2 {

bool has_reth(Opcode op) {
  return op == Opcode::kWriteFirst || op == Opcode::kWriteOnly || op == Opcode::kWriteOnlyImm ||
         op == Opcode::kReadRequest;
}
bool has_imm(Opcode op) {
  return op == Opcode::kSendLastImm || op == Opcode::kSendOnlyImm || op == Opcode::kWriteLastImm ||
         op == Opcode::kWriteOnlyImm;
}
bool has_aeth(Opcode op) { return op == Opcode::kAcknowledge; }
bool is_write(Opcode op) { return op >= Opcode::kWriteFirst && op <= Opcode::kWriteOnlyImm; }
bool is_send(Opcode op) { return op <= Opcode::kSendOnlyImm; }
bool is_last_or_only(Opcode op) {
  switch (op) {
    case Opcode::kSendLast:
    case Opcode::kSendLastImm:
    case Opcode::kSendOnly:
    case Opcode::kSendOnlyImm:
    case Opcode::kWriteLast:
    case Opcode::kWriteLastImm:
    case Opcode::kWriteOnly:
    case Opcode::kWriteOnlyImm: return true;
    default: return false;
  }
}

namespace {
bool known(uint8_t op) { return op <= 0x0C || op == 0x11; }
size_t ext_bytes(Opcode op) {
  return (has_reth(op) ? sizeof(Reth) : 0) + (has_imm(op) ? 4 : 0) + (has_aeth(op) ? sizeof(Aeth) : 0);
}
}  // namespace

size_t payload_bytes(Opcode op, size_t payload_len) {
  const size_t pad = (4 - (payload_len & 3)) & 3;
  return sizeof(Bth) + ext_bytes(op) + payload_len + pad + kIcrcBytes;
}

uint32_t compute_icrc(std::span<const uint8_t> frame) {
  if (frame.size() < kUdpFrameHeaderBytes + sizeof(Bth) + kIcrcBytes) return 0;  // not a RoCEv2 frame
  // Masked pseudo-header: 8 x 0xFF (the LRH that RoCEv2 does not have), then IP + UDP + BTH.
  uint8_t pseudo[8 + kIpv4HeaderBytes + kUdpHeaderBytes + sizeof(Bth)];
  std::memset(pseudo, 0xFF, 8);
  std::memcpy(pseudo + 8, frame.data() + kEthHeaderBytes, kIpv4HeaderBytes + kUdpHeaderBytes + sizeof(Bth));
  uint8_t* ip = pseudo + 8;
  ip[1] = 0xFF;                     // TOS (DSCP + ECN) may change in flight
  ip[8] = 0xFF;                     // TTL
  ip[10] = ip[11] = 0xFF;           // header checksum
  uint8_t* udp = ip + kIpv4HeaderBytes;
  udp[6] = udp[7] = 0xFF;           // UDP checksum
  udp[kUdpHeaderBytes + 4] = 0xFF; // BTH resv8a (byte 4 of BTH)
  uint32_t crc = crc32_update(kCrcInit, pseudo, sizeof(pseudo));
  const size_t rest_begin = kUdpFrameHeaderBytes + sizeof(Bth);
  const size_t rest_end = frame.size() - kIcrcBytes;
  crc = crc32_update(crc, frame.data() + rest_begin, rest_end - rest_begin);
  return crc_finish(crc);
}

void seal_icrc(std::span<uint8_t> frame) {
  if (frame.size() < kUdpFrameHeaderBytes + sizeof(Bth) + kIcrcBytes) return;
  const uint32_t icrc = compute_icrc(frame);
  uint8_t* slot = frame.data() + frame.size() - kIcrcBytes;
  // Stored least significant byte first, as Linux rxe does.
  slot[0] = static_cast<uint8_t>(icrc);
  slot[1] = static_cast<uint8_t>(icrc >> 8);
  slot[2] = static_cast<uint8_t>(icrc >> 16);
  slot[3] = static_cast<uint8_t>(icrc >> 24);
}

bool decode(std::span<const uint8_t> frame, std::span<const uint8_t> udp, PacketView& out, DecodeError* why) {
  auto fail = [why](DecodeError e) {
    if (why) *why = e;
    return false;
  };
  if (udp.size() < sizeof(Bth) + kIcrcBytes) return fail(DecodeError::kTooShort);
  if (frame.size() < kUdpFrameHeaderBytes + udp.size()) return fail(DecodeError::kTooShort);
  Bth bth;
  std::memcpy(&bth, udp.data(), sizeof(Bth));
  if (!known(bth.opcode)) return fail(DecodeError::kBadOpcode);
  if ((bth.flags & 0x0F) != 0) return fail(DecodeError::kBadVersion);  // TVer 0
  out.opcode = static_cast<Opcode>(bth.opcode);
  out.pad = (bth.flags >> 4) & 3;
  out.dest_qp = load_be24(bth.dest_qp);
  out.psn = load_be24(bth.psn);
  out.ack_req = bth.ack_req & 0x80;
  const size_t ext = ext_bytes(out.opcode);
  if (udp.size() < sizeof(Bth) + ext + out.pad + kIcrcBytes) return fail(DecodeError::kTooShort);
  const uint8_t* p = udp.data() + sizeof(Bth);
  out.reth.reset();
  out.imm.reset();
  out.aeth.reset();
  if (has_reth(out.opcode)) {
    Reth r;
    std::memcpy(&r, p, sizeof(r));
    out.reth = r;
    p += sizeof(Reth);
  }
  if (has_imm(out.opcode)) {
    out.imm = load_be32(p);
    p += 4;
  }
  if (has_aeth(out.opcode)) {
    Aeth a;
    std::memcpy(&a, p, sizeof(a));
    out.aeth = a;
    p += sizeof(Aeth);
  }
  const size_t body = udp.size() - sizeof(Bth) - ext - kIcrcBytes;
  if ((body & 3) != 0) return fail(DecodeError::kBadLength);  // PadCnt must pad the payload to a 4-byte boundary
  if (out.opcode == Opcode::kAcknowledge || out.opcode == Opcode::kReadRequest) {
    if (body != 0) return fail(DecodeError::kBadLength);
  }
  out.payload = {p, body - out.pad};
  // ICRC covers the frame up to the end of the UDP payload; ignore Ethernet padding.
  const auto exact = frame.first(kUdpFrameHeaderBytes + udp.size());
  const uint8_t* slot = exact.data() + exact.size() - kIcrcBytes;
  const uint32_t got = slot[0] | (slot[1] << 8) | (slot[2] << 16) | (static_cast<uint32_t>(slot[3]) << 24);
  if (got != compute_icrc(exact)) return fail(DecodeError::kBadChecksum);
  if (why) *why = DecodeError::kNone;
  return true;
}

size_t encode(std::span<uint8_t> udp, Opcode op, uint32_t dest_qp, uint32_t psn, bool ack_req,
              const Reth* reth, const uint32_t* imm, const Aeth* aeth, std::span<const uint8_t> payload) {
  const size_t total = payload_bytes(op, payload.size());
  if (udp.size() < total) return 0;
  if (has_reth(op) != (reth != nullptr) || has_imm(op) != (imm != nullptr) || has_aeth(op) != (aeth != nullptr))
    return 0;
  const size_t pad = (4 - (payload.size() & 3)) & 3;
  Bth bth{};
  bth.opcode = static_cast<uint8_t>(op);
  bth.flags = static_cast<uint8_t>(pad << 4);
  bth.pkey.set(0xFFFF);
  store_be24(bth.dest_qp, dest_qp & 0xFFFFFF);
  bth.ack_req = ack_req ? 0x80 : 0;
  store_be24(bth.psn, psn & kPsnMask);
  uint8_t* p = udp.data();
  std::memcpy(p, &bth, sizeof(bth));
  p += sizeof(bth);
  if (reth) std::memcpy(p, reth, sizeof(Reth)), p += sizeof(Reth);
  if (imm) store_be32(p, *imm), p += 4;
  if (aeth) std::memcpy(p, aeth, sizeof(Aeth)), p += sizeof(Aeth);
  if (!payload.empty()) std::memcpy(p, payload.data(), payload.size());
  p += payload.size();
  std::memset(p, 0, pad + kIcrcBytes);
  return total;
}

}  // namespace metaroce::wire::rocev2
