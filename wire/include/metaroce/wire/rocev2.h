// RoCEv2 (InfiniBand RC transport over UDP/IPv4) framing for the go-back-N baseline.
//
//   UDP dst 4791 | BTH 12 B | RETH 16 B (first/only WRITE, READ request) |
//   ImmDt 4 B (…_IMM) | AETH 4 B (ACK/NAK) | payload | ICRC 4 B
//
// Field layout follows the InfiniBand Architecture Specification Vol. 1 (and
// Linux rxe_hdr.h), so standard dissectors decode what we send.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "metaroce/wire/metaroce.h"  // Be16/Be32/Be64

namespace metaroce::wire::rocev2 {

inline constexpr uint16_t kUdpPort = 4791;
inline constexpr uint32_t kPsnMask = 0xFFFFFF;
inline constexpr size_t kIcrcBytes = 4;

// RC opcodes (transport 000b).
enum class Opcode : uint8_t {
  kSendFirst = 0x00,
  kSendMiddle = 0x01,
  kSendLast = 0x02,
  kSendLastImm = 0x03,
  kSendOnly = 0x04,
  kSendOnlyImm = 0x05,
  kWriteFirst = 0x06,
  kWriteMiddle = 0x07,
  kWriteLast = 0x08,
  kWriteLastImm = 0x09,
  kWriteOnly = 0x0A,
  kWriteOnlyImm = 0x0B,
  kReadRequest = 0x0C,
  kAcknowledge = 0x11,
};

// AETH syndromes.
inline constexpr uint8_t kSyndromeAck = 0x00;
inline constexpr uint8_t kSyndromeRnrNak = 0x20;
inline constexpr uint8_t kSyndromeNakPsnSeqError = 0x60;
inline constexpr uint8_t kSyndromeNakInvalidRequest = 0x61;
inline constexpr uint8_t kSyndromeNakRemoteAccess = 0x62;

#pragma pack(push, 1)
struct Bth {
  uint8_t opcode;       // Opcode
  uint8_t flags;        // SE(7) M(6) PadCnt(5:4) TVer(3:0)
  Be16 pkey;            // partition key, 0xFFFF default
  uint8_t resv8a;       // F/B congestion bits (6,7 in IB), ignored; masked in ICRC
  uint8_t dest_qp[3];   // destination QP number, 24 bit
  uint8_t ack_req;      // A(7), reserved(6:0)
  uint8_t psn[3];       // packet sequence number, 24 bit
};
static_assert(sizeof(Bth) == 12);

struct Reth {
  Be64 va;              // remote virtual address
  Be32 rkey;            // remote key
  Be32 dma_len;         // total length of the RDMA operation
};
static_assert(sizeof(Reth) == 16);

struct Aeth {
  uint8_t syndrome;     // kSyndrome*; for RNR/NAK the low 5 bits carry the code
  uint8_t msn[3];       // message sequence number, 24 bit
};
static_assert(sizeof(Aeth) == 4);
#pragma pack(pop)

bool has_reth(Opcode op);
bool has_imm(Opcode op);
bool has_aeth(Opcode op);
bool is_write(Opcode op);
bool is_send(Opcode op);
bool is_last_or_only(Opcode op);

struct PacketView {
  Opcode opcode{};
  uint32_t dest_qp = 0;
  uint32_t psn = 0;
  bool ack_req = false;
  uint8_t pad = 0;
  std::optional<Reth> reth;
  std::optional<uint32_t> imm;
  std::optional<Aeth> aeth;
  std::span<const uint8_t> payload;  // without pad bytes
};

// ICRC over a complete Ethernet/IPv4/UDP frame whose last 4 bytes are the ICRC
// slot: CRC-32 of 8 bytes of 0xFF, the IPv4 header with TOS, TTL and checksum
// masked to 1s, the UDP header with checksum masked, the BTH with resv8a masked,
// and everything up to the ICRC. Stored little-endian as on the wire.
uint32_t compute_icrc(std::span<const uint8_t> frame);

// Decodes the UDP payload of a RoCEv2 packet inside `frame` (the whole
// Ethernet frame, needed for the ICRC). Returns false on any inconsistency or
// ICRC mismatch, and then sets *why (if given): kTooShort, kBadOpcode (unknown
// opcode), kBadVersion (TVer != 0), kBadLength (pad, body), kBadChecksum (ICRC).
bool decode(std::span<const uint8_t> frame, std::span<const uint8_t> udp_payload, PacketView& out,
            DecodeError* why = nullptr);

// Bytes of a RoCEv2 UDP payload with these headers and payload (pad included).
size_t payload_bytes(Opcode op, size_t payload_len);

// Encodes headers + payload into udp_payload (the UDP payload region of a frame
// whose Eth/IP/UDP headers the caller writes), leaving the ICRC slot to be
// filled by seal_icrc(frame) once the outer headers are in place.
size_t encode(std::span<uint8_t> udp_payload, Opcode op, uint32_t dest_qp, uint32_t psn, bool ack_req,
              const Reth* reth, const uint32_t* imm, const Aeth* aeth, std::span<const uint8_t> payload);
void seal_icrc(std::span<uint8_t> frame);

}  // namespace metaroce::wire::rocev2
