// CaseContext: packets built with wire/ encoders, answers judged with wire/
// decoders, every step written to the case's transcript.
#include "case_context.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "metaroce/wire/crc.h"

namespace metaroce::conformance {
namespace {

namespace mw = metaroce::wire;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::string flags_text(uint8_t f) {
  std::string s;
  auto add = [&](uint8_t bit, const char* name) {
    if (f & bit) s += (s.empty() ? "" : "|") + std::string(name);
  };
  add(mw::kFlagAckReq, "ACK_REQ");
  add(mw::kFlagFirst, "FIRST");
  add(mw::kFlagLast, "LAST");
  add(mw::kFlagRetx, "RETX");
  if (f & 0xF0) s += (s.empty() ? "" : "|") + format("0x%02x", f & 0xF0);
  return s.empty() ? "0" : s;
}

// Slot geometry of a target region (traffic.h SlotLayout).
uint32_t slots_per_stream(uint32_t queue_depth) { return 2 * std::max<uint32_t>(queue_depth, 1); }
uint32_t slot_bytes(uint32_t max_message_bytes) { return std::max<uint32_t>(8, (max_message_bytes + 7) & ~7u); }
uint32_t slots_per_stream(const ConnectionRequest& r) { return slots_per_stream(r.queue_depth); }
uint32_t slot_bytes(const ConnectionRequest& r) { return slot_bytes(r.max_message_bytes); }

}  // namespace

uint64_t pattern_word(uint64_t seed, uint64_t slot, uint64_t word) {
  return splitmix64(seed ^ (slot * 0xD1B54A32D192ED03ull) ^ (word * 0x8CB92BA72F3D8DD7ull));
}

std::string sack_text(const uint8_t sack[32]) {
  std::string s;
  for (uint32_t i = 0; i < mw::kSackBits;) {
    if (!mw::sack_test(sack, i)) {
      ++i;
      continue;
    }
    uint32_t j = i;
    while (j + 1 < mw::kSackBits && mw::sack_test(sack, j + 1)) ++j;
    s += (s.empty() ? "" : ", ") + (i == j ? std::to_string(i) : std::to_string(i) + "-" + std::to_string(j));
    i = j + 1;
  }
  return "{" + s + "}";
}

std::string describe_packet(std::span<const uint8_t> packet) {
  mw::PacketView v;
  const mw::DecodeError e = mw::decode_packet(packet, v);
  if (e != mw::DecodeError::kNone) {
    std::string s = format("undecodable (%s), %zu bytes", std::string(mw::decode_error_name(e)).c_str(), packet.size());
    if (packet.size() >= 2) s += format(", first bytes %02x %02x", packet[0], packet[1]);
    return s;
  }
  const auto& c = v.common;
  std::string s = format("%s path %u dst 0x%06x src 0x%06x stream %u", std::string(mw::opcode_name(v.opcode)).c_str(),
                         c.path_id, c.dst_conn_id.get(), c.src_conn_id.get(), c.stream_id.get());
  switch (v.opcode) {
    case mw::Opcode::kAck: {
      s += format(" watermark %u rate_hint %u kbit/s", c.msg_seq.get(), v.ext.ack.rate_hint_kbps.get());
      for (const mw::AckBlock& b : v.ack_blocks)
        s += format(" [block path %u cum %u echo %u ece %u ecn_count %u sack %s]", b.path_id, b.cum_seq.get(),
                    b.echo_ts.get(), b.flags & mw::kAckFlagEce, b.ecn_count.get(), sack_text(b.sack).c_str());
      return s;
    }
    case mw::Opcode::kNak:
      return s + format(" code %s (0x%02x) nak.stream %u nak.msg_seq %u nak.msg_offset %u",
                        std::string(mw::nak_code_name(static_cast<mw::NakCode>(v.ext.nak.code))).c_str(),
                        v.ext.nak.code, v.ext.nak.stream_id.get(), v.ext.nak.msg_seq.get(),
                        v.ext.nak.msg_offset.get());
    default:
      break;
  }
  s += format(" seq %u floor %u msg %u off %u len %u flags %s ts %u", c.path_seq.get(), c.path_floor.get(),
              c.msg_seq.get(), c.msg_offset.get(), c.msg_len.get(), flags_text(c.flags).c_str(), c.tx_ts.get());
  if (v.opcode == mw::Opcode::kWrite || v.opcode == mw::Opcode::kWriteImm)
    s += format(" addr 0x%" PRIx64 " rkey 0x%08x imm %u", v.ext.write.remote_addr.get(), v.ext.write.rkey.get(),
                v.ext.write.imm.get());
  if (v.opcode == mw::Opcode::kFetchAdd || v.opcode == mw::Opcode::kCmpSwap)
    s += format(" addr 0x%" PRIx64 " rkey 0x%08x operand %" PRIu64 " compare %" PRIu64, v.ext.atomic.remote_addr.get(),
                v.ext.atomic.rkey.get(), v.ext.atomic.operand.get(), v.ext.atomic.compare.get());
  if (v.opcode == mw::Opcode::kReadReq)
    s += format(" addr 0x%" PRIx64 " rkey 0x%08x length %u", v.ext.read_req.remote_addr.get(), v.ext.read_req.rkey.get(),
                v.ext.read_req.length.get());
  if (v.opcode == mw::Opcode::kAtomicResp) s += format(" original %" PRIu64, v.ext.atomic_resp.original.get());
  if (!v.payload.empty()) s += format(" payload %zu B", v.payload.size());
  return s;
}

namespace {

const char* rocev2_opcode_name(wire::rocev2::Opcode op) {
  using O = wire::rocev2::Opcode;
  switch (op) {
    case O::kSendFirst: return "SEND_FIRST";
    case O::kSendMiddle: return "SEND_MIDDLE";
    case O::kSendLast: return "SEND_LAST";
    case O::kSendLastImm: return "SEND_LAST_IMM";
    case O::kSendOnly: return "SEND_ONLY";
    case O::kSendOnlyImm: return "SEND_ONLY_IMM";
    case O::kWriteFirst: return "WRITE_FIRST";
    case O::kWriteMiddle: return "WRITE_MIDDLE";
    case O::kWriteLast: return "WRITE_LAST";
    case O::kWriteLastImm: return "WRITE_LAST_IMM";
    case O::kWriteOnly: return "WRITE_ONLY";
    case O::kWriteOnlyImm: return "WRITE_ONLY_IMM";
    case O::kReadRequest: return "READ_REQUEST";
    case O::kAcknowledge: return "ACKNOWLEDGE";
  }
  return "?";
}

// §12's AETH syndromes by name.
std::string syndrome_text(uint8_t s) {
  namespace rv = wire::rocev2;
  const char* name = (s & 0xE0) == rv::kSyndromeAck         ? "ACK"
                     : (s & 0xE0) == rv::kSyndromeRnrNak     ? "RNR NAK"
                     : s == rv::kSyndromeNakPsnSeqError      ? "NAK PSN sequence error"
                     : s == rv::kSyndromeNakInvalidRequest   ? "NAK invalid request"
                     : s == rv::kSyndromeNakRemoteAccess     ? "NAK remote access error"
                                                             : "unknown syndrome";
  return format("%s (0x%02x)", name, s);
}

}  // namespace

std::string describe_rocev2(std::span<const uint8_t> frame) {
  namespace rv = wire::rocev2;
  const auto udp = mw::decode_udp_frame(frame);
  if (!udp) return format("RoCEv2: not an Eth/IPv4/UDP frame, %zu bytes", frame.size());
  rv::PacketView v;
  mw::DecodeError why = mw::DecodeError::kNone;
  if (!rv::decode(frame, udp->payload, v, &why))
    return format("RoCEv2: undecodable (%s), UDP payload %zu bytes", std::string(mw::decode_error_name(why)).c_str(),
                  udp->payload.size());
  std::string s = format("RoCEv2 %s qp 0x%06x psn %u%s", rocev2_opcode_name(v.opcode), v.dest_qp, v.psn,
                         v.ack_req ? " ACK_REQ" : "");
  if (v.reth)
    s += format(" va 0x%" PRIx64 " rkey 0x%08x dma_len %u", v.reth->va.get(), v.reth->rkey.get(), v.reth->dma_len.get());
  if (v.aeth) s += " AETH " + syndrome_text(v.aeth->syndrome) + format(" msn %u", mw::load_be24(v.aeth->msn));
  if (!v.payload.empty()) s += format(" payload %zu B", v.payload.size());
  return s;
}

CaseContext::CaseContext(Dut& dut, const RunOptions& options, uint64_t case_seed, CaseResult& result)
    : dut_(dut), options_(options), seed_(case_seed), result_(result) {}

CaseContext::~CaseContext() {
  for (const auto& s : senders_)
    if (!s->finished) dut_.stop_sender(s->conn);
  for (const auto& c : conns_) dut_.close(*c);
  for (uint32_t key : regions_) dut_.deregister_region(key);
}

const DutConnection& CaseContext::open(ConnectionRequest request) {
  // Suite-side ids: 24 bits, never 0, distinct within the case.
  uint32_t id = 0;
  do {
    seed_ = splitmix64(seed_);
    id = static_cast<uint32_t>(seed_ % 0xFFFFFF) + 1;
  } while (owns_tool_id(id));
  request.tool_id = id;
  request.seed = (seed_ >> 8) | 1;
  conns_.push_back(std::make_unique<DutConnection>(dut_.open(request)));
  const DutConnection& c = *conns_.back();
  note_sent(format("open %s: suite id 0x%06x, %u paths, %u streams, chunk %u B, slots of %u B%s",
                   request.rocev2 ? "RoCEv2 RC QP" : "connection", id, request.paths, unsigned{request.streams},
                   request.mtu_payload, request.max_message_bytes, request.recv_message_bytes ? ", receives posted" : ""));
  note_seen(format("connection open: DUT id 0x%06x, region 0x%" PRIx64 " (%" PRIu64 " B) rkey 0x%08x", c.dut_id,
                   c.remote_addr, c.remote_length, c.rkey));
  return c;
}

DutRegion CaseContext::register_region(uint64_t length, const std::vector<std::string>& access) {
  std::string rights;
  for (const auto& a : access) rights += (rights.empty() ? "" : ",") + a;
  note_sent(format("Memory.Register %" PRIu64 " B, access %s", length, rights.c_str()));
  const DutRegion r = dut_.register_region(length, access);
  regions_.push_back(r.key);
  note_seen(format("region 0x%" PRIx64 " key 0x%08x", r.addr, r.key));
  return r;
}

bool CaseContext::owns_tool_id(uint32_t id) const {
  return std::any_of(conns_.begin(), conns_.end(), [&](const auto& c) { return c->tool_id == id; }) ||
         std::any_of(senders_.begin(), senders_.end(), [&](const auto& s) { return s->conn.tool_id == id; });
}

const SenderConnection& CaseContext::start_sender(SenderJob job, std::function<bool(const Answer&)> withhold) {
  uint32_t id = 0;
  do {
    seed_ = splitmix64(seed_);
    id = static_cast<uint32_t>(seed_ % 0xFFFFFF) + 1;
  } while (owns_tool_id(id));
  job.tool_id = id;
  // The suite's target region (it places nothing: the packets are judged as they come).
  job.region_addr = 0x500000000000ull + (uint64_t{id} << 20);
  job.rkey = id ^ 0x5A5A0000u;
  job.region_bytes = uint64_t{slots_per_stream(job.queue_depth)} * slot_bytes(job.max_message_bytes) + 8;  // 1 stream
  note_sent(format("Traffic.Start at the DUT toward the suite: %s, %" PRIu64 " messages of %u B, %u paths, queue depth "
                   "%u, chunk %u B, min RTO %" PRId64 " ns; the suite answers Peer.Accept as id 0x%06x",
                   job.operation.c_str(), job.messages, job.message_bytes, job.paths, job.queue_depth,
                   job.mtu_payload, job.min_rto_ns, id));
  auto s = std::make_unique<Sender>();
  s->conn = dut_.start_sender(job, options_.answer_timeout);
  s->withhold = std::move(withhold);
  note_seen(format("Peer.Accept from the DUT: its id 0x%06x, job %" PRIu64, s->conn.dut_id, s->conn.job_id));
  senders_.push_back(std::move(s));
  return senders_.back()->conn;
}

CaseContext::Sender* CaseContext::sender_of(const Answer& a) {
  if (a.error != mw::DecodeError::kNone) return nullptr;
  for (const auto& s : senders_)
    if (s->conn.tool_id == a.view.common.dst_conn_id.get() && s->conn.dut_id == a.view.common.src_conn_id.get())
      return s.get();
  return nullptr;
}

void CaseContext::receive_from_sender(Sender& s, Answer& a) {
  if (!mw::is_data_opcode(a.view.opcode)) return;
  const auto& c = a.view.common;
  if (s.withhold && s.withhold(a)) {
    a.withheld = true;
    result_.seen.back() += " (withheld: the suite treats it as lost)";
    result_.frames.back().comment += " (withheld: the suite treats it as lost)";
    return;
  }
  std::set<uint32_t>& got = s.seqs[c.path_id];
  got.insert(c.path_seq.get());
  // §6.2: cum_seq slides to the sender's path_floor, then runs over what arrived.
  uint32_t cum = c.path_floor.get();
  while (got.count(cum)) ++cum;
  // §11.7: the watermark passes complete messages in msg_seq order.
  if ((a.view.opcode == mw::Opcode::kWrite || a.view.opcode == mw::Opcode::kWriteImm) &&
      static_cast<int32_t>(c.msg_seq.get() - s.watermark) >= 0) {
    s.chunks[c.msg_seq.get()].insert(c.msg_offset.get());
    s.lengths[c.msg_seq.get()] = c.msg_len.get();
  }
  for (;;) {
    auto it = s.lengths.find(s.watermark);
    if (it == s.lengths.end()) break;
    const uint32_t chunk = std::max<uint32_t>(s.conn.job.mtu_payload, 1);
    if (s.chunks[s.watermark].size() < (it->second + chunk - 1) / chunk) break;
    s.chunks.erase(s.watermark);
    s.lengths.erase(it);
    ++s.watermark;
  }
  send_ack(c.src_conn_id.get(), c.dst_conn_id.get(), c.path_id, c.stream_id.get(), s.watermark, cum, c.tx_ts.get(), got,
           "the suite acknowledging the DUT's packet");
}

void CaseContext::send_read_response(const SenderConnection& c, const Answer& request) {
  const auto& h = request.view.common;
  const mw::ReadReqExt& r = request.view.ext.read_req;
  const SenderJob& j = c.job;
  Sender* sender = nullptr;
  for (const auto& k : senders_)
    if (k->conn.tool_id == c.tool_id) sender = k.get();
  if (!sender) throw CaseFailure("internal: a READ response on a connection the case did not start");
  // The bytes a READ of the suite's target reads (traffic.h: slot pattern, word 0 included).
  const uint64_t off = r.remote_addr.get() - j.region_addr;
  const uint32_t sb = slot_bytes(j.max_message_bytes);
  const uint64_t slot = off / sb;
  for (uint32_t o = 0; o < r.length.get(); o += j.mtu_payload) {
    Outgoing out;
    out.op = mw::Opcode::kReadResp;
    out.path = 0;
    out.dst_conn = c.dut_id;
    out.src_conn = c.tool_id;
    out.stream = h.stream_id.get();
    // The suite never retransmits (loopback, or a fabric without loss): every
    // seq before this one is given up, so path_floor = path_seq.
    out.seq = out.floor = sender->response_seq++;
    out.msg_seq = h.msg_seq.get();
    out.msg_offset = o;
    out.msg_len = r.length.get();
    const uint32_t plen = std::min(j.mtu_payload, r.length.get() - o);
    out.flags = static_cast<uint8_t>((o == 0 ? mw::kFlagFirst : 0) |
                                     (o + plen == out.msg_len ? mw::kFlagLast | mw::kFlagAckReq : 0));
    out.payload.resize(plen);
    for (uint32_t i = 0; i < plen; ++i) {
      const uint64_t b = (off % sb) + o + i;
      out.payload[i] = static_cast<uint8_t>(pattern_word(c.seed, slot, b / 8) >> (8 * (b % 8)));
    }
    send(out);
  }
}

bool CaseContext::sender_complete(const SenderConnection& c) const {
  return sender_watermark(c) >= c.job.messages;
}

uint32_t CaseContext::sender_watermark(const SenderConnection& c) const {
  for (const auto& s : senders_)
    if (s->conn.tool_id == c.tool_id) return s->watermark;
  return 0;
}

SenderOutcome CaseContext::finish_sender(const SenderConnection& c) {
  note_sent(format("Traffic.Watch job %" PRIu64 " at the DUT until it ends", c.job_id));
  const SenderOutcome o = dut_.finish_sender(c, options_.answer_timeout);
  for (const auto& s : senders_)
    if (s->conn.tool_id == c.tool_id && o.ended) s->finished = true;
  note_seen(format("job %" PRIu64 ": %s, %" PRIu64 " completion errors, %" PRIu64 " retransmits, %" PRIu64 " RTOs%s%s",
                   c.job_id, o.ended ? o.state.c_str() : ("still " + o.state).c_str(), o.completion_errors,
                   o.retransmits, o.rtos, o.error.empty() ? "" : "; error: ", o.error.c_str()));
  return o;
}

std::vector<const Answer*> CaseContext::sender_packets(const SenderConnection& c) const {
  std::vector<const Answer*> out;
  for (const auto& a : answers_)
    if (a->error == mw::DecodeError::kNone && mw::is_data_opcode(a->view.opcode) &&
        a->view.common.dst_conn_id.get() == c.tool_id && a->view.common.src_conn_id.get() == c.dut_id)
      out.push_back(a.get());
  return out;
}

// The common header's fields (§4.1) on connection c: every template starts here.
Outgoing CaseContext::header(const DutConnection& c, mw::Opcode op, uint8_t flags, uint16_t stream, uint32_t msg_seq,
                             uint8_t path, uint32_t seq, uint32_t floor) {
  Outgoing o;
  o.op = op;
  o.flags = flags;
  o.path = path;
  o.dst_conn = c.dut_id;
  o.src_conn = c.tool_id;
  o.stream = stream;
  o.seq = seq;
  o.floor = floor;
  o.msg_seq = msg_seq;
  return o;
}

Outgoing CaseContext::probe(const DutConnection& c, uint8_t path, uint32_t seq, uint32_t floor, uint16_t stream) const {
  return header(c, mw::Opcode::kProbe, mw::kFlagAckReq /* §4.1: set on every PROBE */, stream, 0, path, seq, floor);
}

Outgoing CaseContext::write_chunk(const DutConnection& c, uint16_t stream, uint32_t msg_seq, uint32_t len,
                                  uint32_t chunk, uint8_t path, uint32_t seq, uint32_t floor) const {
  const ConnectionRequest& r = c.request;
  const uint32_t off = chunk * r.mtu_payload;
  const uint32_t plen = std::min(r.mtu_payload, len - off);
  const uint64_t slot = uint64_t{stream} * slots_per_stream(r) + msg_seq % slots_per_stream(r);
  Outgoing o = header(c, mw::Opcode::kWrite,
                      static_cast<uint8_t>((off == 0 ? mw::kFlagFirst : 0) |
                                           (off + plen == len ? mw::kFlagLast | mw::kFlagAckReq : 0)),
                      stream, msg_seq, path, seq, floor);
  o.msg_offset = off;
  o.msg_len = len;
  o.remote_addr = c.remote_addr + slot * slot_bytes(r) + off;
  o.rkey = c.rkey;
  o.payload.resize(plen);
  for (uint32_t i = 0; i < plen; ++i) {
    const uint32_t byte = off + i;
    const uint64_t word = byte < 8 && len >= 8 ? message_header(stream, msg_seq) : pattern_word(r.seed, slot, byte / 8);
    o.payload[i] = static_cast<uint8_t>(word >> (8 * (byte % 8)));  // low byte first, as the DUT stores it
  }
  return o;
}

Outgoing CaseContext::fetch_add(const DutConnection& c, uint16_t stream, uint32_t msg_seq, uint64_t addend,
                                uint8_t path, uint32_t seq, uint32_t floor) const {
  const ConnectionRequest& r = c.request;
  Outgoing o = header(c, mw::Opcode::kFetchAdd, kOnePacketMessage, stream, msg_seq, path, seq, floor);
  o.remote_addr = c.remote_addr + uint64_t{r.streams} * slots_per_stream(r) * slot_bytes(r) + 8ull * stream;
  o.rkey = c.rkey;
  o.operand = addend;
  return o;
}

Outgoing CaseContext::read_request(const DutConnection& c, uint16_t stream, uint32_t msg_seq, uint64_t addr,
                                   uint32_t length, uint8_t path, uint32_t seq, uint32_t floor) const {
  Outgoing o = header(c, mw::Opcode::kReadReq, kOnePacketMessage, stream, msg_seq, path, seq, floor);
  o.remote_addr = addr;
  o.rkey = c.rkey;
  o.read_length = length;
  return o;
}

Built CaseContext::build(const Outgoing& o) {
  Built b;
  b.tx_ts = next_ts_++;
  mw::CommonHeader h{};
  h.version = mw::kVersion << 4;
  h.opcode = static_cast<uint8_t>(o.op);
  h.flags = o.flags;
  h.path_id = o.path;
  h.dst_conn_id.set(o.dst_conn);
  h.src_conn_id.set(o.src_conn);
  h.stream_id.set(o.stream);
  h.payload_len.set(static_cast<uint16_t>(o.payload.size()));
  h.path_seq.set(o.seq);
  h.path_floor.set(o.floor);
  h.msg_seq.set(o.msg_seq);
  h.msg_offset.set(o.msg_offset);
  h.msg_len.set(o.msg_len);
  h.tx_ts.set(b.tx_ts);
  mw::WriteExt w{};
  mw::AtomicExt at{};
  mw::ReadReqExt rd{};
  const void* ext = nullptr;
  size_t ext_len = 0;
  if (o.op == mw::Opcode::kWrite || o.op == mw::Opcode::kWriteImm) {
    w.remote_addr.set(o.remote_addr);
    w.rkey.set(o.rkey);
    w.imm.set(o.imm);
    ext = &w;
    ext_len = sizeof w;
  } else if (o.op == mw::Opcode::kReadReq) {
    rd.remote_addr.set(o.remote_addr);
    rd.rkey.set(o.rkey);
    rd.length.set(o.read_length);
    ext = &rd;
    ext_len = sizeof rd;
  } else if (o.op == mw::Opcode::kFetchAdd || o.op == mw::Opcode::kCmpSwap) {
    at.remote_addr.set(o.remote_addr);
    at.rkey.set(o.rkey);
    at.operand.set(o.operand);
    at.compare.set(o.compare);
    ext = &at;
    ext_len = sizeof at;
  }
  b.bytes.resize(mw::packet_bytes(o.op, o.payload.size()));
  const size_t n = mw::encode_packet(b.bytes, h, ext, ext_len, o.payload);
  if (n != b.bytes.size()) throw CaseFailure("internal: the wire encoder refused the suite's own packet");
  return b;
}

uint32_t CaseContext::send(const Outgoing& o, wire::Ecn ecn) {
  const Built b = build(o);
  send_bytes(b, "", ecn);
  return b.tx_ts;
}

void CaseContext::send_bytes(const Built& b, const std::string& note, wire::Ecn ecn) {
  std::string line = describe_packet(b.bytes);
  if (ecn == wire::Ecn::kCe) line += " (IP ECN CE)";
  if (!note.empty()) line += " (" + note + ")";
  note_sent(line);
  record(false, b.bytes, ecn, "sent: " + line);
  dut_.send(b.bytes, ecn);
}

std::vector<uint8_t> CaseContext::rocev2_write(const DutConnection& c, uint32_t psn, uint32_t msg_seq, bool ack_req,
                                               const std::vector<uint8_t>* payload) const {
  namespace rv = wire::rocev2;
  const Outgoing w = write_chunk(c, 0, msg_seq, c.request.mtu_payload, 0, 0, 0, 0);  // slot address and pattern
  const std::vector<uint8_t>& bytes = payload ? *payload : w.payload;
  rv::Reth reth{};
  reth.va.set(w.remote_addr);
  reth.rkey.set(w.rkey);
  reth.dma_len.set(static_cast<uint32_t>(bytes.size()));
  const size_t udp_len = rv::payload_bytes(rv::Opcode::kWriteOnly, bytes.size());
  std::vector<uint8_t> frame(mw::kUdpFrameHeaderBytes + udp_len);
  mw::encode_udp_headers(frame, dut_.rocev2_flow_to_dut(), mw::Ecn::kEct0, 0, udp_len);
  const size_t n = rv::encode(std::span<uint8_t>(frame).subspan(mw::kUdpFrameHeaderBytes), rv::Opcode::kWriteOnly,
                              c.dut_id, psn & rv::kPsnMask, ack_req, &reth, nullptr, nullptr, bytes);
  if (n != udp_len) throw CaseFailure("internal: the RoCEv2 encoder refused the suite's own packet");
  rv::seal_icrc(frame);
  return frame;
}

void CaseContext::send_rocev2(std::span<const uint8_t> frame, const std::string& note) {
  std::string line = describe_rocev2(frame);
  if (!note.empty()) line += " (" + note + ")";
  note_sent(line);
  record(false, frame, wire::Ecn::kEct0, "sent: " + line, true);
  dut_.send_rocev2(frame);
}

bool CaseContext::collect_rocev2_until(const std::function<bool()>& done) {
  namespace rv = wire::rocev2;
  const auto until = std::chrono::steady_clock::now() + options_.answer_timeout;
  bool ok = done();
  while (!ok) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    auto bytes = dut_.receive_rocev2(left);
    if (!bytes) break;
    auto a = std::make_unique<RoceAnswer>();
    a->frame = std::make_shared<const std::vector<uint8_t>>(std::move(*bytes));
    const auto udp = mw::decode_udp_frame(*a->frame);
    if (!udp) a->error = mw::DecodeError::kTooShort;
    else if (!rv::decode(*a->frame, udp->payload, a->view, &a->error) && a->error == mw::DecodeError::kNone)
      a->error = mw::DecodeError::kTooShort;
    // Late answers to QPs of earlier cases are not this case's business.
    if (udp && udp->payload.size() >= sizeof(rv::Bth) && !owns_tool_id(mw::load_be24(udp->payload.data() + 5))) continue;
    note_seen(describe_rocev2(*a->frame));
    record(true, *a->frame, wire::Ecn::kNotEct, "seen: " + result_.seen.back(), true);
    rocev2_answers_.push_back(std::move(a));
    ok = done();
  }
  for (; rocev2_checked_ < rocev2_answers_.size(); ++rocev2_checked_) {
    const RoceAnswer& a = *rocev2_answers_[rocev2_checked_];
    const std::string seen = describe_rocev2(*a.frame);
    expect(a.error == mw::DecodeError::kNone, "every RoCEv2 frame from the DUT to decode with its ICRC intact (§12)",
           seen);
    expect(a.is_aeth(), "only ACKNOWLEDGE packets from a RoCEv2 responder to WRITEs (§12)", seen);
    const bool known = std::any_of(conns_.begin(), conns_.end(),
                                   [&](const auto& k) { return k->request.rocev2 && k->tool_id == a.view.dest_qp; });
    expect(known, "an ACKNOWLEDGE to the suite's QP number (BTH DestQP, §12)", seen);
  }
  return ok;
}

bool CaseContext::collect_until(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + options_.answer_timeout;
  bool ok = done();
  while (!ok) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    auto bytes = dut_.receive(left);
    if (!bytes) break;
    auto a = std::make_unique<Answer>();
    a->bytes = std::make_shared<const std::vector<uint8_t>>(std::move(*bytes));
    a->error = mw::decode_packet(*a->bytes, a->view);
    // Late answers for connections of earlier cases are not this case's business.
    if (a->error == mw::DecodeError::kNone && !owns_tool_id(a->view.common.dst_conn_id.get())) continue;
    note_seen(describe_packet(*a->bytes));
    record(true, *a->bytes, wire::Ecn::kNotEct, "seen: " + result_.seen.back());
    if (Sender* snd = sender_of(*a)) receive_from_sender(*snd, *a);
    else if (acknowledge_) acknowledge(*a);
    answers_.push_back(std::move(a));
    ok = done();
  }
  for (; checked_ < answers_.size(); ++checked_) check_well_formed(*answers_[checked_]);
  return ok;
}

void CaseContext::record(bool from_dut, std::span<const uint8_t> packet, wire::Ecn ecn, std::string comment,
                         bool whole_frame) {
  CaseFrame f;
  f.time_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  f.from_dut = from_dut;
  f.ecn = ecn;
  f.packet.assign(packet.begin(), packet.end());
  f.whole_frame = whole_frame;
  f.comment = std::move(comment);
  result_.frames.push_back(std::move(f));
}

void CaseContext::acknowledge(const Answer& a) {
  if (a.error != mw::DecodeError::kNone || !mw::is_data_opcode(a.view.opcode)) return;
  const auto& c = a.view.common;
  const uint8_t path = c.path_id;
  std::set<uint32_t>& got = dut_seqs_[path];
  got.insert(c.path_seq.get());
  // cum_seq: the first seq not received, counting from the DUT's floor.
  uint32_t cum = c.path_floor.get();
  while (got.count(cum)) ++cum;
  send_ack(c.src_conn_id.get(), c.dst_conn_id.get(), path, c.stream_id.get(), 0, cum, c.tx_ts.get(), got,
           "the suite acknowledging the DUT's packet");
}

void CaseContext::send_ack(uint32_t dst, uint32_t src, uint8_t path, uint16_t stream, uint32_t watermark, uint32_t cum,
                           uint32_t echo, const std::set<uint32_t>& got, const std::string& note) {
  mw::AckBlock b{};
  b.path_id = path;
  b.cum_seq.set(cum);
  b.echo_ts.set(echo);
  for (uint32_t s : got)
    if (static_cast<int32_t>(s - cum) > 0 && s - cum - 1 < mw::kSackBits) mw::sack_set(b.sack, s - cum - 1);
  mw::CommonHeader h{};
  h.version = mw::kVersion << 4;
  h.opcode = static_cast<uint8_t>(mw::Opcode::kAck);
  h.path_id = path;
  h.dst_conn_id.set(dst);
  h.src_conn_id.set(src);
  h.stream_id.set(stream);
  h.msg_seq.set(watermark);
  h.tx_ts.set(next_ts_++);
  mw::AckExt e{};
  e.num_blocks = 1;
  std::vector<uint8_t> out(mw::packet_bytes(mw::Opcode::kAck, 0, 1));
  mw::encode_packet(out, h, &e, sizeof e, {}, std::span<const mw::AckBlock>(&b, 1));
  note_sent(describe_packet(out) + " (" + note + ")");
  record(false, out, wire::Ecn::kNotEct, "sent: " + result_.sent.back());
  dut_.send(out, wire::Ecn::kNotEct);
}

void CaseContext::check_well_formed(const Answer& a) {
  if (a.error != mw::DecodeError::kNone)
    throw CaseFailure("expected every packet from the DUT to decode (§10); seen " + describe_packet(*a.bytes));
  const auto& c = a.view.common;
  if (a.is_ack()) {
    // §6.3: an ACK's sequencing and message fields are 0, flags 0.
    expect(c.flags == 0 && c.path_seq.get() == 0 && c.path_floor.get() == 0 && c.msg_offset.get() == 0 &&
               c.msg_len.get() == 0 && c.payload_len.get() == 0,
           "an ACK with flags, path_seq, path_floor, msg_offset, msg_len and payload_len 0 (§6.3)",
           describe_packet(*a.bytes));
    for (const mw::AckBlock& b : a.view.ack_blocks)
      expect(((b.flags & mw::kAckFlagEce) != 0) == (b.ecn_count.get() > 0),
             "ECE set exactly when ecn_count > 0 (§6.2)", describe_packet(*a.bytes));
    const bool known = std::any_of(conns_.begin(), conns_.end(), [&](const auto& k) {
      return k->tool_id == c.dst_conn_id.get() && k->dut_id == c.src_conn_id.get();
    }) || std::any_of(senders_.begin(), senders_.end(), [&](const auto& k) {
      return k->conn.tool_id == c.dst_conn_id.get() && k->conn.dut_id == c.src_conn_id.get();
    });
    expect(known, "an ACK from the DUT's connection id to the suite's (dst_conn_id = suite id, src_conn_id = DUT id, §6.3)",
           describe_packet(*a.bytes));
    return;
  }
  if (a.is_nak()) {
    // §8: path_seq = path_floor = msg_seq = 0; the refused message is in NakExt.
    expect(c.path_seq.get() == 0 && c.path_floor.get() == 0 && c.msg_seq.get() == 0,
           "a NAK with path_seq, path_floor and msg_seq 0 (§8)", describe_packet(*a.bytes));
    return;
  }
  // A DUT sending toward the suite: its WRITEs, READ_REQs and PROBEs (§4).
  const bool from_sender = std::any_of(senders_.begin(), senders_.end(), [&](const auto& k) {
    return k->conn.tool_id == c.dst_conn_id.get() && k->conn.dut_id == c.src_conn_id.get();
  });
  if (from_sender && (a.view.opcode == mw::Opcode::kWrite || a.view.opcode == mw::Opcode::kReadReq ||
                      a.view.opcode == mw::Opcode::kProbe))
    return;
  // Responses and the DUT's own PROBEs only where the case asks for responses.
  if (acknowledge_ && (a.view.opcode == mw::Opcode::kAtomicResp || a.view.opcode == mw::Opcode::kReadResp ||
                       a.view.opcode == mw::Opcode::kProbe))
    return;
  throw CaseFailure("expected only ACKs and NAKs from a responder to WRITE and PROBE packets; seen " +
                    describe_packet(*a.bytes));
}

std::vector<AckSeen> CaseContext::blocks(const DutConnection& c, uint8_t path) const {
  std::vector<AckSeen> out;
  for (const auto& a : answers_) {
    if (!a->is_ack() || a->view.common.dst_conn_id.get() != c.tool_id) continue;
    for (const mw::AckBlock& b : a->view.ack_blocks)
      if (b.path_id == path) out.push_back(AckSeen{a.get(), b});
  }
  return out;
}

std::vector<const Answer*> CaseContext::naks() const {
  std::vector<const Answer*> out;
  for (const auto& a : answers_)
    if (a->is_nak()) out.push_back(a.get());
  return out;
}

AckSeen CaseContext::await_ack(const DutConnection& c, uint8_t path, uint32_t tx_ts, const std::string& what) {
  AckSeen found;
  const bool ok = collect_until([&] {
    for (const AckSeen& s : blocks(c, path))
      if (s.block.echo_ts.get() == tx_ts) {
        found = s;
        return true;
      }
    return false;
  });
  if (!ok)
    throw CaseFailure(format("expected an ACK block for path %u echoing tx_ts %u (%s) within %lld ms (§6.4: ACK_REQ is "
                             "acknowledged at once); seen none",
                             path, tx_ts, what.c_str(), static_cast<long long>(options_.answer_timeout.count())));
  return found;
}

const Answer& CaseContext::await_nak(uint32_t tool_id, uint16_t stream, uint32_t msg_seq, const std::string& what) {
  const Answer* found = nullptr;
  const bool ok = collect_until([&] {
    for (const Answer* a : naks())
      if (a->view.common.dst_conn_id.get() == tool_id && a->view.ext.nak.stream_id.get() == stream &&
          a->view.ext.nak.msg_seq.get() == msg_seq) {
        found = a;
        return true;
      }
    return false;
  });
  if (!ok)
    throw CaseFailure(format("expected a NAK for stream %u message %u (%s) within %lld ms; seen none", stream, msg_seq,
                             what.c_str(), static_cast<long long>(options_.answer_timeout.count())));
  return *found;
}

VerifyOutcome CaseContext::verify(const DutConnection& c, const std::string& operation, uint32_t message_bytes,
                                  const std::vector<uint64_t>& stream_end) {
  std::string ends;
  for (uint64_t e : stream_end) ends += (ends.empty() ? "" : ", ") + std::to_string(e);
  note_sent(format("Peer.Verify DUT id 0x%06x: %s, %u B messages, completed per stream [%s]", c.dut_id,
                   operation.c_str(), message_bytes, ends.c_str()));
  VerifyOutcome v = dut_.verify(c, operation, message_bytes, stream_end);
  // A watermark on the wire says the receive completions exist; a daemon may
  // still be about to hand them to the code Peer.Verify asks (metaroced runs
  // control commands before it polls completions in a worker iteration). So
  // while the count is short, ask again: each call waits for another worker
  // iteration. Bounded; a count above the expected one is never re-asked.
  uint64_t expected = 0;
  for (uint64_t e : stream_end) expected += e;
  for (int again = 0; again < 20 && !v.ok && operation == "write_imm" && v.received_messages < expected; ++again) {
    note_seen(format("Peer.Verify: %" PRIu64 " of %" PRIu64 " receive completions so far; asking again",
                     v.received_messages, expected));
    v = dut_.verify(c, operation, message_bytes, stream_end);
  }
  note_seen(format("Peer.Verify: %s, %" PRIu64 " B checked, %" PRIu64 " mismatches, %" PRIu64 " receive completions%s%s",
                   v.ok ? "ok" : "FAILED", v.checked_bytes, v.mismatches, v.received_messages,
                   v.detail.empty() ? "" : "; first: ", v.detail.c_str()));
  return v;
}

void CaseContext::expect(bool ok, const std::string& expected, const std::string& seen) {
  if (!ok) throw CaseFailure("expected " + expected + "; seen " + seen);
}

void CaseContext::expect_block(const AckSeen& a, uint32_t cum, const std::vector<uint32_t>& bits,
                               const std::string& when) {
  uint8_t want[32] = {};
  for (uint32_t b : bits) mw::sack_set(want, b);
  const bool ok = a.block.cum_seq.get() == cum && std::memcmp(a.block.sack, want, sizeof want) == 0;
  expect(ok, format("%s: cum_seq %u (0x%08x), SACK bits %s", when.c_str(), cum, cum, sack_text(want).c_str()),
         format("cum_seq %u (0x%08x), SACK bits %s", a.block.cum_seq.get(), a.block.cum_seq.get(),
                sack_text(a.block.sack).c_str()));
}

void CaseContext::expect_no_nak(const std::string& when) {
  const auto n = naks();
  if (!n.empty()) throw CaseFailure("expected no NAK " + when + "; seen " + describe_packet(*n.front()->bytes));
}

}  // namespace metaroce::conformance
