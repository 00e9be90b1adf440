#include "metaroce/wire/metaroce.h"

#include <cstring>

#include "metaroce/wire/crc.h"

namespace metaroce::wire {

std::string_view opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kWrite: return "WRITE";
    case Opcode::kWriteImm: return "WRITE_IMM";
    case Opcode::kSend: return "SEND";
    case Opcode::kSendImm: return "SEND_IMM";
    case Opcode::kReadReq: return "READ_REQ";
    case Opcode::kReadResp: return "READ_RESP";
    case Opcode::kFetchAdd: return "FETCH_ADD";
    case Opcode::kCmpSwap: return "CMP_SWAP";
    case Opcode::kAtomicResp: return "ATOMIC_RESP";
    case Opcode::kProbe: return "PROBE";
    case Opcode::kAck: return "ACK";
    case Opcode::kNak: return "NAK";
  }
  return "UNKNOWN";
}

std::string_view nak_code_name(NakCode c) {
  switch (c) {
    case NakCode::kRnr: return "RNR";
    case NakCode::kBadKey: return "BAD_KEY";
    case NakCode::kOutOfBounds: return "OUT_OF_BOUNDS";
    case NakCode::kAccessViolation: return "ACCESS_VIOLATION";
    case NakCode::kUnknownConnection: return "UNKNOWN_CONNECTION";
    case NakCode::kInvalidRequest: return "INVALID_REQUEST";
  }
  return "UNKNOWN";
}

std::string_view decode_error_name(DecodeError e) {
  switch (e) {
    case DecodeError::kNone: return "none";
    case DecodeError::kTooShort: return "too_short";
    case DecodeError::kBadVersion: return "bad_version";
    case DecodeError::kBadOpcode: return "bad_opcode";
    case DecodeError::kBadLength: return "bad_length";
    case DecodeError::kBadChecksum: return "bad_checksum";
    case DecodeError::kBadField: return "bad_field";
  }
  return "unknown";
}

size_t ext_header_bytes(Opcode op) {
  switch (op) {
    case Opcode::kWrite:
    case Opcode::kWriteImm: return sizeof(WriteExt);
    case Opcode::kSend:
    case Opcode::kSendImm: return sizeof(SendExt);
    case Opcode::kReadReq: return sizeof(ReadReqExt);
    case Opcode::kFetchAdd:
    case Opcode::kCmpSwap: return sizeof(AtomicExt);
    case Opcode::kAtomicResp: return sizeof(AtomicRespExt);
    case Opcode::kAck: return sizeof(AckExt);
    case Opcode::kNak: return sizeof(NakExt);
    case Opcode::kReadResp:
    case Opcode::kProbe: return 0;
  }
  return 0;
}

bool is_data_opcode(Opcode op) { return op != Opcode::kAck && op != Opcode::kNak; }

namespace {
bool known_opcode(uint8_t v) {
  return (v >= 0x01 && v <= 0x0A) || v == 0x10 || v == 0x11;
}
bool carries_payload(Opcode op) {
  switch (op) {
    case Opcode::kWrite:
    case Opcode::kWriteImm:
    case Opcode::kSend:
    case Opcode::kSendImm:
    case Opcode::kReadResp: return true;
    default: return false;
  }
}
}  // namespace

size_t packet_bytes(Opcode op, size_t payload_len, size_t ack_blocks) {
  return sizeof(CommonHeader) + ext_header_bytes(op) + ack_blocks * sizeof(AckBlock) + payload_len +
         kCrcBytes;
}

DecodeError decode_packet(std::span<const uint8_t> buf, PacketView& out) {
  if (buf.size() < sizeof(CommonHeader) + kCrcBytes) return DecodeError::kTooShort;
  std::memcpy(&out.common, buf.data(), sizeof(CommonHeader));
  if ((out.common.version >> 4) != kVersion || (out.common.version & 0x0F) != 0)
    return DecodeError::kBadVersion;
  if (!known_opcode(out.common.opcode)) return DecodeError::kBadOpcode;
  out.opcode = static_cast<Opcode>(out.common.opcode);
  const size_t ext_len = ext_header_bytes(out.opcode);
  const size_t payload_len = out.common.payload_len.get();
  size_t blocks_len = 0;
  if (buf.size() < sizeof(CommonHeader) + ext_len + kCrcBytes) return DecodeError::kTooShort;
  std::memcpy(&out.ext, buf.data() + sizeof(CommonHeader), ext_len);
  if (out.opcode == Opcode::kAck) {
    const size_t n = out.ext.ack.num_blocks;
    if (n == 0 || n > kMaxAckBlocks) return DecodeError::kBadField;
    blocks_len = n * sizeof(AckBlock);
  }
  // The datagram must be exactly header + ext + blocks + payload + CRC.
  const size_t expect = sizeof(CommonHeader) + ext_len + blocks_len + payload_len + kCrcBytes;
  if (buf.size() != expect) return DecodeError::kBadLength;
  const size_t covered = expect - kCrcBytes;
  if (crc32c(buf.first(covered)) != load_be32(buf.data() + covered)) return DecodeError::kBadChecksum;

  if (out.common.flags & 0xF0) return DecodeError::kBadField;
  if (!carries_payload(out.opcode) && payload_len != 0) return DecodeError::kBadLength;
  const uint64_t off = out.common.msg_offset.get();
  const uint64_t mlen = out.common.msg_len.get();
  if (carries_payload(out.opcode) && off + payload_len > mlen) return DecodeError::kBadField;
  if (is_data_opcode(out.opcode) && out.opcode != Opcode::kProbe && out.common.dst_conn_id.get() == 0)
    return DecodeError::kBadField;
  if (out.opcode == Opcode::kReadReq && out.ext.read_req.length.get() == 0) return DecodeError::kBadField;
  const uint8_t* after_ext = buf.data() + sizeof(CommonHeader) + ext_len;
  out.ack_blocks = {reinterpret_cast<const AckBlock*>(after_ext), blocks_len / sizeof(AckBlock)};
  out.payload = {after_ext + blocks_len, payload_len};
  return DecodeError::kNone;
}

uint8_t* begin_packet(std::span<uint8_t> out, const CommonHeader& common, const void* ext,
                      size_t ext_len) {
  const size_t payload_len = common.payload_len.get();
  if (out.size() < sizeof(CommonHeader) + ext_len + payload_len + kCrcBytes) return nullptr;
  std::memcpy(out.data(), &common, sizeof(CommonHeader));
  if (ext_len) std::memcpy(out.data() + sizeof(CommonHeader), ext, ext_len);
  return out.data() + sizeof(CommonHeader) + ext_len;
}

size_t finish_packet(std::span<uint8_t> out, size_t ext_len, size_t payload_len) {
  const size_t covered = sizeof(CommonHeader) + ext_len + payload_len;
  if (out.size() < covered + kCrcBytes) return 0;
  store_be32(out.data() + covered, crc32c(out.first(covered)));
  return covered + kCrcBytes;
}

size_t encode_packet(std::span<uint8_t> out, const CommonHeader& common, const void* ext,
                     size_t ext_len, std::span<const uint8_t> payload,
                     std::span<const AckBlock> blocks) {
  const size_t blocks_len = blocks.size() * sizeof(AckBlock);
  if (common.payload_len.get() != payload.size()) return 0;
  const size_t total = sizeof(CommonHeader) + ext_len + blocks_len + payload.size() + kCrcBytes;
  if (out.size() < total) return 0;
  uint8_t* p = out.data();
  std::memcpy(p, &common, sizeof(CommonHeader));
  p += sizeof(CommonHeader);
  if (ext_len) std::memcpy(p, ext, ext_len);
  p += ext_len;
  if (blocks_len) std::memcpy(p, blocks.data(), blocks_len);
  p += blocks_len;
  if (!payload.empty()) std::memcpy(p, payload.data(), payload.size());
  const size_t covered = total - kCrcBytes;
  store_be32(out.data() + covered, crc32c(out.first(covered)));
  return total;
}

}  // namespace metaroce::wire
