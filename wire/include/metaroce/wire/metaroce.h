// MetaRoCE wire format, version 1 (docs/spec/metaroce-wire-v1.md).
//
// A MetaRoCE packet is the payload of a UDP/IPv4 datagram (default destination
// port kDefaultUdpPort) laid out as:
//
//   CommonHeader (40 B) | opcode extension header (0-32 B) | payload | CRC32C (4 B)
//
// All multi-byte fields are big-endian. The CRC32C trailer covers every byte
// from the first byte of the common header to the last payload byte. The
// layouts below are the specification: every field is documented where it is
// declared, and each struct's size is asserted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "metaroce/wire/bytes.h"

namespace metaroce::wire {

// Big-endian integers as stored on the wire; byte arrays keep structs unaligned-safe.
struct Be16 {
  uint8_t b[2];
  uint16_t get() const { return load_be16(b); }
  void set(uint16_t v) { store_be16(b, v); }
};
struct Be32 {
  uint8_t b[4];
  uint32_t get() const { return load_be32(b); }
  void set(uint32_t v) { store_be32(b, v); }
};
struct Be64 {
  uint8_t b[8];
  uint64_t get() const { return load_be64(b); }
  void set(uint64_t v) { store_be64(b, v); }
};

inline constexpr uint16_t kDefaultUdpPort = 4794;  // 4791 is RoCEv2, 4793 is UET
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kSackBits = 256;
inline constexpr size_t kCrcBytes = 4;

enum class Opcode : uint8_t {
  kWrite = 0x01,        // RDMA WRITE data; ext WriteExt
  kWriteImm = 0x02,     // RDMA WRITE with immediate; ext WriteExt
  kSend = 0x03,         // SEND data; ext SendExt
  kSendImm = 0x04,      // SEND with immediate; ext SendExt
  kReadReq = 0x05,      // RDMA READ request; ext ReadReqExt, no payload
  kReadResp = 0x06,     // RDMA READ response data; no ext
  kFetchAdd = 0x07,     // atomic fetch-and-add request; ext AtomicExt
  kCmpSwap = 0x08,      // atomic compare-and-swap request; ext AtomicExt
  kAtomicResp = 0x09,   // atomic response; ext AtomicRespExt
  kProbe = 0x0A,        // path probe: sequenced, no payload, always acknowledged
  kAck = 0x10,          // selective acknowledgment; ext AckExt + AckBlock[n]
  kNak = 0x11,          // negative acknowledgment of one message; ext NakExt
};

// CommonHeader.flags bits.
inline constexpr uint8_t kFlagAckReq = 0x01;   // receiver acknowledges without delay
inline constexpr uint8_t kFlagFirst = 0x02;    // first packet of its message
inline constexpr uint8_t kFlagLast = 0x04;     // last packet of its message (by offset)
inline constexpr uint8_t kFlagRetx = 0x08;     // this transmission is a retransmission

#pragma pack(push, 1)
struct CommonHeader {
  uint8_t version;     // high nibble: protocol version (1); low nibble: zero, reserved
  uint8_t opcode;      // Opcode
  uint8_t flags;       // kFlag* bits; undefined bits must be zero
  uint8_t path_id;     // sender's path index within the connection (0..kMaxPaths-1)
  Be32 dst_conn_id;    // connection id at the receiving endpoint (nonzero on data packets)
  Be32 src_conn_id;    // connection id at the sending endpoint (nonzero)
  Be16 stream_id;      // ordered stream within the connection
  Be16 payload_len;    // payload bytes after the extension header, before the CRC
  Be32 path_seq;       // sequence number of this transmission on path_id (0 for ACK/NAK)
  Be32 path_floor;     // every path_seq below this is resolved by the sender (acked or
                       // given up and resent elsewhere): the receiver may slide past it
  Be32 msg_seq;        // message sequence number within the stream (requester's numbering;
                       // READ/atomic responses echo the request's)
  Be32 msg_offset;     // byte offset of this payload within the message
  Be32 msg_len;        // total message length in bytes (READ_REQ: 0; the read length is in ext)
  Be32 tx_ts;          // sender's clock at transmission (ns, low 32 bits), echoed in ACKs for RTT
};
static_assert(sizeof(CommonHeader) == 40);

struct WriteExt {      // WRITE, WRITE_IMM: every packet self-describes its destination
  Be64 remote_addr;    // remote virtual address of this packet's first payload byte
  Be32 rkey;           // remote key of the target memory region
  Be32 imm;            // immediate data (WRITE_IMM), zero otherwise
};
static_assert(sizeof(WriteExt) == 16);

struct SendExt {       // SEND, SEND_IMM: every packet carries its receive match
  Be32 recv_seq;       // which posted receive on this stream (0 = first ever posted)
  Be32 imm;            // immediate data (SEND_IMM), zero otherwise
};                     // the offset inside that receive buffer is msg_offset
static_assert(sizeof(SendExt) == 8);

struct ReadReqExt {
  Be64 remote_addr;    // responder's virtual address to read from
  Be32 rkey;           // responder's memory region key
  Be32 length;         // bytes to read (1..max message size)
};
static_assert(sizeof(ReadReqExt) == 16);

struct AtomicExt {
  Be64 remote_addr;    // 8-byte aligned responder address
  Be32 rkey;
  Be32 reserved;       // zero
  Be64 operand;        // FETCH_ADD: addend; CMP_SWAP: swap value
  Be64 compare;        // CMP_SWAP: compare value; FETCH_ADD: zero
};
static_assert(sizeof(AtomicExt) == 32);

struct AtomicRespExt {
  Be64 original;       // value at remote_addr before the operation
};
static_assert(sizeof(AtomicRespExt) == 8);

struct AckExt {
  Be32 rate_hint_kbps;  // receiver's fair share for this sender, kbit/s; 0 = no limit
  uint8_t num_blocks;   // AckBlocks that follow (1..kMaxAckBlocks)
  uint8_t reserved[3];  // zero
};
static_assert(sizeof(AckExt) == 8);

struct AckBlock {       // state of one path, as seen by the receiver
  uint8_t path_id;
  uint8_t flags;        // bit 0 ECE: CE-marked packets arrived on this path since the last block
  Be16 ecn_count;       // number of those CE-marked packets (saturates at 65535)
  Be32 cum_seq;         // next path_seq expected: all below it received or resolved
  Be32 echo_ts;         // tx_ts of the packet that triggered this block
  uint8_t sack[32];     // bit i (byte i/8, LSB first) set: path_seq cum_seq+1+i received
};
static_assert(sizeof(AckBlock) == 44);

struct NakExt {
  uint8_t code;         // NakCode
  uint8_t reserved;     // zero
  Be16 stream_id;       // stream of the refused message
  Be32 msg_seq;         // refused message
  Be32 msg_offset;      // offset of the refused packet
};
static_assert(sizeof(NakExt) == 12);
#pragma pack(pop)

inline constexpr uint8_t kAckFlagEce = 0x01;
inline constexpr size_t kMaxAckBlocks = 8;

enum class NakCode : uint8_t {
  kRnr = 0x01,             // receiver not ready: no receive posted for recv_seq; retry later
  kBadKey = 0x02,          // rkey names no memory region
  kOutOfBounds = 0x03,     // access outside the memory region
  kAccessViolation = 0x04, // region lacks the right (remote write/read/atomic)
  kUnknownConnection = 0x05,  // dst_conn_id unknown at the receiver
  kInvalidRequest = 0x06,  // malformed or inconsistent request (e.g. SEND larger than receive)
};

std::string_view opcode_name(Opcode op);
std::string_view nak_code_name(NakCode c);
size_t ext_header_bytes(Opcode op);  // 0 for unknown opcodes and those without one
bool is_data_opcode(Opcode op);      // sequenced packets that carry or request data

enum class DecodeError : uint8_t {
  kNone = 0,
  kTooShort,
  kBadVersion,
  kBadOpcode,
  kBadLength,
  kBadChecksum,
  kBadField,
};
std::string_view decode_error_name(DecodeError e);

// A decoded packet: fields in host order, spans pointing into the input buffer.
struct PacketView {
  CommonHeader common{};
  Opcode opcode{};
  union {
    WriteExt write;
    SendExt send;
    ReadReqExt read_req;
    AtomicExt atomic;
    AtomicRespExt atomic_resp;
    AckExt ack;
    NakExt nak;
  } ext{};
  std::span<const AckBlock> ack_blocks;  // for kAck (unaligned-safe: packed, byte fields)
  std::span<const uint8_t> payload;
};

// Validates and decodes one MetaRoCE packet (a UDP payload). Checks the CRC32C,
// the version, the opcode, that payload_len and the block count agree with the
// buffer, and field consistency (msg_offset + payload_len <= msg_len, ...).
DecodeError decode_packet(std::span<const uint8_t> udp_payload, PacketView& out);

// Serialised size of a packet with this opcode, payload and ack block count.
size_t packet_bytes(Opcode op, size_t payload_len, size_t ack_blocks = 0);

// Encoding: the caller fills a CommonHeader and an extension, the encoder lays
// them out, copies the payload and appends the CRC. Returns bytes written or 0
// when out is too small.
size_t encode_packet(std::span<uint8_t> out, const CommonHeader& common, const void* ext,
                     size_t ext_len, std::span<const uint8_t> payload,
                     std::span<const AckBlock> blocks = {});

// For the data path: lays out header and ext, leaves payload_len bytes of room
// after them for the caller to fill in place, then finish_packet() adds the CRC.
uint8_t* begin_packet(std::span<uint8_t> out, const CommonHeader& common, const void* ext,
                      size_t ext_len);
size_t finish_packet(std::span<uint8_t> out, size_t ext_len, size_t payload_len);

// SACK bitvector helpers (bit i = cum_seq + 1 + i).
inline bool sack_test(const uint8_t* sack, size_t i) { return (sack[i >> 3] >> (i & 7)) & 1; }
inline void sack_set(uint8_t* sack, size_t i) { sack[i >> 3] |= static_cast<uint8_t>(1u << (i & 7)); }

}  // namespace metaroce::wire
