// Writes the pcapng files the Wireshark dissector is tested against, from the
// project's own encoders (wire/), deterministically (fixed timestamps and
// field values), so tshark's output can be compared with golden text:
//   metaroce.pcapng   every MetaRoCE v1 packet type, NAK code and ACK shape
//   malformed.pcapng  one frame per decoder check of spec section 10, each
//                     broken in exactly that way (the dissector must flag it)
//   rocev2.pcapng     the RoCEv2 baseline's frames (Wireshark's own dissector)
//   mutated.pcapng    the well-formed samples with random bytes changed (seeded)
// Usage: make_sample_pcaps OUT_DIR
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "metaroce/capture/pcapng.h"
#include "metaroce/wire/crc.h"
#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/rocev2.h"
#include "metaroce/wire/udp_frame.h"

namespace {

namespace w = metaroce::wire;
namespace rv = metaroce::wire::rocev2;
using Bytes = std::vector<uint8_t>;

constexpr uint64_t kEpochNs = 1'767'225'600ull * 1'000'000'000ull;  // 2026-01-01T00:00:00Z

w::UdpFlow flow(uint16_t dst_port, bool reverse = false) {
  w::UdpFlow f;
  f.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  f.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  f.src_ip = 0x0A000001;  // 10.0.0.1
  f.dst_ip = 0x0A000002;  // 10.0.0.2
  f.src_port = 49152;
  f.dst_port = dst_port;
  if (reverse) {
    std::swap(f.src_mac, f.dst_mac);
    std::swap(f.src_ip, f.dst_ip);
  }
  return f;
}

// A MetaRoCE packet in an Eth/IPv4/UDP frame.
Bytes metaroce_frame(const w::CommonHeader& h, const void* ext, size_t ext_len, const Bytes& payload,
                     const std::vector<w::AckBlock>& blocks = {}, w::Ecn ecn = w::Ecn::kEct0, bool reverse = false) {
  Bytes udp(w::kMaxFrameBytes);
  w::CommonHeader c = h;
  c.payload_len.set(static_cast<uint16_t>(payload.size()));
  const size_t n = w::encode_packet(udp, c, ext, ext_len, payload, blocks);
  if (n == 0) {
    std::fprintf(stderr, "make_sample_pcaps: encode_packet refused opcode %u\n", unsigned{h.opcode});
    std::exit(1);
  }
  udp.resize(n);
  Bytes frame(w::kUdpFrameHeaderBytes + n);
  w::encode_udp_headers(frame, flow(w::kDefaultUdpPort, reverse), ecn, 0, n);
  std::memcpy(frame.data() + w::kUdpFrameHeaderBytes, udp.data(), n);
  return frame;
}

// Rewrites the UDP payload of a frame (and the IP/UDP lengths) after a change.
Bytes reframe(const Bytes& udp_payload, bool fix_crc) {
  Bytes p = udp_payload;
  if (fix_crc && p.size() >= 4) {
    const uint32_t c = w::crc32c({p.data(), p.size() - 4});
    for (int i = 0; i < 4; ++i) p[p.size() - 4 + i] = static_cast<uint8_t>(c >> (24 - 8 * i));
  }
  Bytes frame(w::kUdpFrameHeaderBytes + p.size());
  w::encode_udp_headers(frame, flow(w::kDefaultUdpPort), w::Ecn::kEct0, 0, p.size());
  std::memcpy(frame.data() + w::kUdpFrameHeaderBytes, p.data(), p.size());
  return frame;
}
Bytes udp_payload_of(const Bytes& frame) { return Bytes(frame.begin() + w::kUdpFrameHeaderBytes, frame.end()); }

w::CommonHeader header(w::Opcode op, uint8_t flags, uint8_t path, uint16_t stream, uint32_t seq, uint32_t floor,
                       uint32_t msg_seq, uint32_t off, uint32_t len) {
  w::CommonHeader h{};
  h.version = w::kVersion << 4;
  h.opcode = static_cast<uint8_t>(op);
  h.flags = flags;
  h.path_id = path;
  h.dst_conn_id.set(0x102);
  h.src_conn_id.set(0x201);
  h.stream_id.set(stream);
  h.path_seq.set(seq);
  h.path_floor.set(floor);
  h.msg_seq.set(msg_seq);
  h.msg_offset.set(off);
  h.msg_len.set(len);
  h.tx_ts.set(0x12345678);
  return h;
}
w::CommonHeader reply_header(w::Opcode op, uint8_t path, uint16_t stream, uint32_t msg_seq) {
  w::CommonHeader h = header(op, 0, path, stream, 0, 0, msg_seq, 0, 0);
  h.dst_conn_id.set(0x201);
  h.src_conn_id.set(0x102);
  h.tx_ts.set(0x12350000);
  return h;
}

Bytes pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i);
  return b;
}

struct Sample {
  Bytes frame;
  std::string comment;
};

std::vector<Sample> metaroce_samples() {
  using O = w::Opcode;
  std::vector<Sample> s;
  const uint8_t first_last = w::kFlagAckReq | w::kFlagFirst | w::kFlagLast;
  {  // The spec's worked example (section 9): one-packet WRITE.
    w::WriteExt e{};
    e.remote_addr.set(0x00007F0000001000ull);
    e.rkey.set(0x42);
    s.push_back({metaroce_frame(header(O::kWrite, first_last, 2, 3, 1000, 998, 7, 0, 4), &e, sizeof e,
                                {0xDE, 0xAD, 0xBE, 0xEF}),
                 "WRITE, spec section 9"});
  }
  {  // WRITE_IMM of two chunks: first and last packet.
    w::WriteExt e{};
    e.remote_addr.set(0x10000);
    e.rkey.set(0x1234);
    e.imm.set(0xCAFEF00D);
    s.push_back({metaroce_frame(header(O::kWriteImm, w::kFlagFirst, 0, 0, 10, 10, 1, 0, 96), &e, sizeof e,
                                pattern(64, 1)),
                 "WRITE_IMM first"});
    e.remote_addr.set(0x10040);
    s.push_back({metaroce_frame(header(O::kWriteImm, w::kFlagAckReq | w::kFlagLast, 1, 0, 20, 19, 1, 64, 96), &e,
                                sizeof e, pattern(32, 65)),
                 "WRITE_IMM last"});
    // The first chunk again, after a loss, under a new path_seq.
    e.remote_addr.set(0x10000);
    s.push_back({metaroce_frame(header(O::kWriteImm, w::kFlagFirst | w::kFlagRetx, 2, 0, 31, 31, 1, 0, 96), &e,
                                sizeof e, pattern(64, 1)),
                 "WRITE_IMM first, retransmitted"});
  }
  {
    w::SendExt e{};
    e.recv_seq.set(5);
    s.push_back({metaroce_frame(header(O::kSend, w::kFlagFirst, 1, 2, 40, 38, 9, 0, 128), &e, sizeof e,
                                pattern(64, 7)),
                 "SEND first"});
    e.imm.set(77);
    s.push_back({metaroce_frame(header(O::kSendImm, first_last, 1, 2, 41, 38, 10, 0, 16), &e, sizeof e,
                                pattern(16, 9), {}, w::Ecn::kCe),
                 "SEND_IMM, CE-marked"});
  }
  {
    w::ReadReqExt e{};
    e.remote_addr.set(0x20000);
    e.rkey.set(0x99);
    e.length.set(4096);
    s.push_back({metaroce_frame(header(O::kReadReq, first_last, 0, 1, 50, 50, 3, 0, 0), &e, sizeof e, {}),
                 "READ_REQ"});
    w::CommonHeader r = reply_header(O::kReadResp, 0, 1, 3);
    r.flags = w::kFlagFirst;
    r.path_seq.set(7);
    r.path_floor.set(7);
    r.msg_len.set(4096);
    s.push_back({metaroce_frame(r, nullptr, 0, pattern(48, 3), {}, w::Ecn::kEct0, true), "READ_RESP first"});
  }
  {
    w::AtomicExt e{};
    e.remote_addr.set(0x30008);
    e.rkey.set(0x77);
    e.operand.set(5);
    s.push_back({metaroce_frame(header(O::kFetchAdd, first_last, 3, 0, 60, 60, 11, 0, 0), &e, sizeof e, {}),
                 "FETCH_ADD"});
    e.operand.set(0xFFFF);
    e.compare.set(0x1111);
    s.push_back({metaroce_frame(header(O::kCmpSwap, first_last, 3, 0, 61, 60, 12, 0, 0), &e, sizeof e, {}),
                 "CMP_SWAP"});
    w::AtomicRespExt a{};
    a.original.set(0x1111);
    w::CommonHeader r = reply_header(O::kAtomicResp, 3, 0, 12);
    r.flags = first_last;
    r.path_seq.set(8);
    r.path_floor.set(8);
    s.push_back({metaroce_frame(r, &a, sizeof a, {}, {}, w::Ecn::kEct0, true), "ATOMIC_RESP"});
  }
  {
    w::CommonHeader p = header(O::kProbe, w::kFlagAckReq, 5, 0, 70, 70, 0, 0, 0);
    s.push_back({metaroce_frame(p, nullptr, 0, {}), "PROBE"});
  }
  {  // The spec's worked ACK: cum 1001, 1002 received and CE-marked.
    w::AckExt e{};
    e.rate_hint_kbps.set(100'000'000);
    e.num_blocks = 1;
    w::AckBlock b{};
    b.path_id = 2;
    b.flags = w::kAckFlagEce;
    b.ecn_count.set(1);
    b.cum_seq.set(1001);
    b.echo_ts.set(0x12345678);
    w::sack_set(b.sack, 0);
    w::CommonHeader h = reply_header(O::kAck, 2, 3, 8);
    s.push_back({metaroce_frame(h, &e, sizeof e, {}, {b}, w::Ecn::kNotEct, true), "ACK, spec section 9"});
    // Two blocks: holes inside the window and a packet at its far edge.
    w::AckBlock c{};
    c.path_id = 0;
    c.cum_seq.set(0xFFFFFFF0u);  // across sequence wrap
    c.echo_ts.set(0x12340000);
    for (size_t i : {0, 1, 2, 5, 254, 255}) w::sack_set(c.sack, i);
    w::AckBlock d{};
    d.path_id = 1;
    d.cum_seq.set(500);
    e.num_blocks = 2;
    e.rate_hint_kbps.set(0);
    h.path_id = 0;
    s.push_back({metaroce_frame(h, &e, sizeof e, {}, {c, d}, w::Ecn::kNotEct, true), "ACK, two blocks"});
  }
  for (uint8_t code = 1; code <= 6; ++code) {
    w::NakExt n{};
    n.code = code;
    n.stream_id.set(2);
    n.msg_seq.set(40 + code);
    n.msg_offset.set(code == 1 ? 0 : 2048);
    w::CommonHeader h = reply_header(O::kNak, 1, 2, 0);
    if (code == static_cast<uint8_t>(w::NakCode::kUnknownConnection)) h.src_conn_id.set(0);
    s.push_back({metaroce_frame(h, &n, sizeof n, {}, {}, w::Ecn::kNotEct, true),
                 "NAK " + std::string(w::nak_code_name(static_cast<w::NakCode>(code)))});
  }
  return s;
}

std::vector<Sample> malformed_samples() {
  using O = w::Opcode;
  std::vector<Sample> s;
  w::WriteExt e{};
  e.rkey.set(0x42);
  const Bytes good = udp_payload_of(
      metaroce_frame(header(O::kWrite, w::kFlagAckReq | w::kFlagFirst | w::kFlagLast, 0, 0, 1, 1, 0, 0, 8), &e,
                     sizeof e, pattern(8, 0)));
  auto variant = [&](const char* what, auto&& change, bool fix_crc) {
    Bytes p = good;
    change(p);
    s.push_back({reframe(p, fix_crc), what});
  };
  variant("too short: 20 bytes", [](Bytes& p) { p.resize(20); }, false);
  variant("bad version 0x20", [](Bytes& p) { p[0] = 0x20; }, true);
  variant("nonzero reserved version nibble", [](Bytes& p) { p[0] = 0x11; }, true);
  variant("unassigned opcode 0x0B", [](Bytes& p) { p[1] = 0x0B; }, true);
  variant("payload_len larger than the datagram", [](Bytes& p) { p[15] = 9; }, true);
  variant("CRC32C wrong (one payload bit flipped)", [](Bytes& p) { p[p.size() - 6] ^= 0x01; }, false);
  variant("reserved flag bits set", [](Bytes& p) { p[2] |= 0x80; }, true);
  variant("msg_offset + payload_len > msg_len", [](Bytes& p) { p[35] = 4; }, true);
  variant("data packet with dst_conn_id 0", [](Bytes& p) { std::memset(&p[4], 0, 4); }, true);
  {  // READ_REQ with length 0; READ_REQ carrying payload.
    w::ReadReqExt r{};
    r.rkey.set(1);
    Bytes p = udp_payload_of(metaroce_frame(header(O::kReadReq, w::kFlagAckReq, 0, 0, 2, 2, 1, 0, 0), &r, sizeof r, {}));
    s.push_back({reframe(p, true), "READ_REQ length 0"});
    r.length.set(64);
    w::CommonHeader h = header(O::kReadReq, w::kFlagAckReq, 0, 0, 3, 3, 2, 0, 0);
    h.payload_len.set(4);
    Bytes q(w::packet_bytes(O::kReadReq, 4));
    std::memcpy(q.data(), &h, sizeof h);
    std::memcpy(q.data() + sizeof h, &r, sizeof r);
    s.push_back({reframe(q, true), "READ_REQ with payload"});
  }
  {  // ACK with 0 and with 9 blocks.
    w::AckExt a{};
    a.num_blocks = 1;
    w::AckBlock b{};
    b.cum_seq.set(1);
    Bytes p = udp_payload_of(metaroce_frame(reply_header(O::kAck, 0, 0, 0), &a, sizeof a, {}, {b}));
    Bytes zero = p;
    zero[44] = 0;
    s.push_back({reframe(zero, true), "ACK with 0 blocks"});
    Bytes nine = p;
    nine[44] = 9;
    s.push_back({reframe(nine, true), "ACK with 9 blocks"});
  }
  return s;
}

std::vector<Sample> rocev2_samples() {
  std::vector<Sample> s;
  auto frame = [&](rv::Opcode op, uint32_t psn, bool ack_req, const rv::Reth* reth, const uint32_t* imm,
                   const rv::Aeth* aeth, const Bytes& payload, bool reverse, const char* what) {
    const size_t n = rv::payload_bytes(op, payload.size());
    Bytes f(w::kUdpFrameHeaderBytes + n);
    w::encode_udp_headers(f, flow(rv::kUdpPort, reverse), aeth ? w::Ecn::kNotEct : w::Ecn::kEct0, 0, n);
    rv::encode({f.data() + w::kUdpFrameHeaderBytes, n}, op, reverse ? 0x11 : 0x22, psn, ack_req, reth, imm, aeth,
               payload);
    rv::seal_icrc(f);
    s.push_back({f, what});
  };
  rv::Reth reth{};
  reth.va.set(0x7F0000001000ull);
  reth.rkey.set(0x42);
  reth.dma_len.set(192);
  frame(rv::Opcode::kWriteFirst, 100, false, &reth, nullptr, nullptr, pattern(64, 1), false, "WRITE first");
  frame(rv::Opcode::kWriteMiddle, 101, false, nullptr, nullptr, nullptr, pattern(64, 2), false, "WRITE middle");
  frame(rv::Opcode::kWriteLast, 102, true, nullptr, nullptr, nullptr, pattern(64, 3), false, "WRITE last");
  const uint32_t imm = 0xABCD;
  reth.dma_len.set(16);
  frame(rv::Opcode::kWriteOnlyImm, 103, true, &reth, &imm, nullptr, pattern(16, 4), false, "WRITE only with imm");
  frame(rv::Opcode::kSendOnly, 104, true, nullptr, nullptr, nullptr, pattern(32, 5), false, "SEND only");
  rv::Aeth ack{};
  ack.syndrome = rv::kSyndromeAck;
  frame(rv::Opcode::kAcknowledge, 104, false, nullptr, nullptr, &ack, {}, true, "ACK");
  rv::Aeth nak{};
  nak.syndrome = rv::kSyndromeNakPsnSeqError;
  frame(rv::Opcode::kAcknowledge, 105, false, nullptr, nullptr, &nak, {}, true, "NAK PSN sequence error");
  return s;
}

// Every well-formed sample with 1-4 random bytes changed and, one time in
// four, cut short: the dissector must survive all of them (no Lua error).
std::vector<Sample> mutated_samples() {
  std::vector<Sample> out;
  uint64_t state = 0x9E3779B97F4A7C15ull;  // fixed seed: the same file every run
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  const std::vector<Sample> base = metaroce_samples();
  for (int round = 0; round < 25; ++round)
    for (const Sample& s : base) {
      Bytes p = udp_payload_of(s.frame);
      const int changes = 1 + static_cast<int>(next() % 4);
      for (int c = 0; c < changes; ++c) p[next() % p.size()] = static_cast<uint8_t>(next());
      if (next() % 4 == 0) p.resize(1 + next() % (p.size() - 1));  // empty UDP payloads reach no dissector
      out.push_back({reframe(p, next() % 2 == 0), "mutated: " + s.comment});
    }
  return out;
}

bool write(const std::string& path, const std::vector<Sample>& samples) {
  metaroce::capture::PcapngWriter out(path, {{"sample", metaroce::capture::kDefaultSnapLength}},
                                      "metaroce-testbed make_sample_pcaps");
  if (!out.ok()) {
    std::fprintf(stderr, "make_sample_pcaps: %s\n", out.error().c_str());
    return false;
  }
  uint64_t t = kEpochNs;
  for (const Sample& s : samples) {
    out.write(0, t, s.frame, s.comment);
    t += 1000;
  }
  return out.flush() && out.counters().frames_not_written == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_sample_pcaps OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const bool ok = write(dir + "/metaroce.pcapng", metaroce_samples()) &&
                  write(dir + "/malformed.pcapng", malformed_samples()) &&
                  write(dir + "/rocev2.pcapng", rocev2_samples()) &&
                  write(dir + "/mutated.pcapng", mutated_samples());
  return ok ? 0 : 1;
}
