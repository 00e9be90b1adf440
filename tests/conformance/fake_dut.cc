// FakeDut: a responder written from docs/spec/metaroce-wire-v1.md (§6, §8,
// §10, §11.3, §11.7, §11.10) with the wire/ codec only.
#include "fake_dut.h"

#include <algorithm>
#include <cstring>

#include "case_context.h"  // pattern_word, message_header: the Peer.Verify pattern
#include "metaroce/wire/crc.h"
#include "metaroce/wire/rocev2.h"

namespace conformance_test {

namespace mc = metaroce::conformance;
namespace mw = metaroce::wire;

namespace {

int32_t seq_diff(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b); }

uint32_t slots_per_stream(uint32_t queue_depth) { return 2 * std::max<uint32_t>(queue_depth, 1); }
uint32_t slot_bytes(uint32_t max_message_bytes) { return std::max<uint32_t>(8, (max_message_bytes + 7) & ~7u); }
uint32_t slots_per_stream(const mc::ConnectionRequest& r) { return slots_per_stream(r.queue_depth); }
uint32_t slot_bytes(const mc::ConnectionRequest& r) { return slot_bytes(r.max_message_bytes); }

uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// First byte at or after `from` of a slot that differs from its pattern, or -1.
int64_t pattern_mismatch(const uint8_t* p, size_t n, uint64_t seed, uint64_t slot, size_t from) {
  for (size_t i = from; i < n; ++i)
    if (p[i] != static_cast<uint8_t>(mc::pattern_word(seed, slot, i / 8) >> (8 * (i % 8)))) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace

FakeDut::FakeDut(Bugs bugs, double inbound_capacity_bps) : bugs_(bugs), capacity_bps_(inbound_capacity_bps) {}

mc::DutConnection FakeDut::open(const mc::ConnectionRequest& r) {
  Conn c;
  c.request = r;
  c.dut_id = next_id_++;
  c.key = next_key_++;
  c.paths.resize(r.paths);
  c.streams.resize(r.streams);
  Region region;
  region.addr = 0x7f0000000000ull + (uint64_t{c.dut_id} << 24);
  region.remote_write = region.remote_atomic = region.remote_read = true;
  const uint32_t sps = slots_per_stream(r), sb = slot_bytes(r);
  region.bytes.assign(uint64_t{r.streams} * sps * sb + 8ull * r.streams, 0);
  for (uint64_t slot = 0; slot < uint64_t{r.streams} * sps; ++slot)
    for (uint32_t i = 0; i < sb; ++i)
      region.bytes[slot * sb + i] = static_cast<uint8_t>(mc::pattern_word(r.seed, slot, i / 8) >> (8 * (i % 8)));
  mc::DutConnection out;
  out.dut_id = c.dut_id;
  out.tool_id = r.tool_id;
  out.remote_addr = region.addr;
  out.rkey = c.key;
  out.remote_length = region.bytes.size();
  out.request = r;
  regions_[c.key] = std::move(region);
  conns_[c.dut_id] = std::move(c);
  return out;
}

void FakeDut::close(const mc::DutConnection& connection) {
  auto it = conns_.find(connection.dut_id);
  if (it == conns_.end()) return;
  regions_.erase(it->second.key);
  conns_.erase(it);
}

mc::DutRegion FakeDut::register_region(uint64_t length, const std::vector<std::string>& access) {
  Region r;
  const uint32_t key = next_key_++;
  r.addr = 0x600000000000ull + (uint64_t{key} << 24);
  r.bytes.assign(length, 0);
  r.remote_write = std::find(access.begin(), access.end(), "remote_write") != access.end();
  r.remote_atomic = std::find(access.begin(), access.end(), "remote_atomic") != access.end();
  r.remote_read = std::find(access.begin(), access.end(), "remote_read") != access.end();
  regions_[key] = r;
  return mc::DutRegion{key, r.addr, length};
}

void FakeDut::deregister_region(uint32_t key) { regions_.erase(key); }

uint8_t FakeDut::check(uint32_t key, uint64_t addr, uint64_t len, Right right, uint8_t** out) {
  auto it = regions_.find(key);
  if (it == regions_.end()) return static_cast<uint8_t>(mw::NakCode::kBadKey);
  Region& r = it->second;
  if (addr < r.addr || addr - r.addr > r.bytes.size() || len > r.bytes.size() - (addr - r.addr))
    return static_cast<uint8_t>(mw::NakCode::kOutOfBounds);
  const bool allowed = right == Right::kWrite ? r.remote_write : right == Right::kRead ? r.remote_read : r.remote_atomic;
  if (!allowed) return static_cast<uint8_t>(mw::NakCode::kAccessViolation);
  *out = r.bytes.data() + (addr - r.addr);
  return 0;
}

void FakeDut::send(std::span<const uint8_t> packet, mw::Ecn ecn) {
  std::vector<uint8_t> bytes(packet.begin(), packet.end());
  mw::PacketView v;
  mw::DecodeError e = mw::decode_packet(bytes, v);
  if (e == mw::DecodeError::kBadChecksum && bugs_.no_crc_check && bytes.size() >= 4) {
    const uint32_t crc = mw::crc32c(std::span<const uint8_t>(bytes.data(), bytes.size() - 4));
    mw::store_be32(bytes.data() + bytes.size() - 4, crc);
    e = mw::decode_packet(bytes, v);
  }
  if (e != mw::DecodeError::kNone) return;  // §7, §10: dropped silently
  if (auto snd = senders_.find(v.common.dst_conn_id.get()); snd != senders_.end()) {
    if (v.opcode == mw::Opcode::kAck) on_sender_ack(snd->second, v);
    if (v.opcode == mw::Opcode::kReadResp) on_read_response(snd->second, v);
    if (snd->second.outcome.ended) {  // the job is over: its connection goes
      ended_[snd->second.conn.job_id] = snd->second.outcome;
      senders_.erase(snd);
    }
    return;
  }
  auto it = conns_.find(v.common.dst_conn_id.get());
  if (it == conns_.end()) {
    // §8: UNKNOWN_CONNECTION, from no connection (src 0), for data packets only.
    if (mw::is_data_opcode(v.opcode) && !bugs_.silent_unknown_connection)
      nak(v.common.src_conn_id.get(), 0, v, mw::NakCode::kUnknownConnection);
    return;
  }
  on_packet(it->second, v, ecn == mw::Ecn::kCe);
}

// §12's responder: only the expected PSN is placed and acknowledged (when it
// asks, AckReq); the first out-of-sequence PSN of a gap draws one NAK carrying
// the expected PSN, later ones nothing until it arrives; a duplicate is
// acknowledged with ePSN - 1 and not placed again.
void FakeDut::send_rocev2(std::span<const uint8_t> frame) {
  namespace rv = mw::rocev2;
  const auto udp = mw::decode_udp_frame(frame);
  rv::PacketView v;
  if (!udp || udp->flow.dst_port != rv::kUdpPort || !rv::decode(frame, udp->payload, v)) return;  // dropped silently
  auto it = conns_.find(v.dest_qp);
  if (it == conns_.end() || !it->second.request.rocev2 || v.opcode == rv::Opcode::kAcknowledge) return;
  Conn& c = it->second;
  auto place = [&]() -> uint8_t {  // 0, or the NAK syndrome
    if (v.opcode != rv::Opcode::kWriteOnly || !v.reth || v.reth->dma_len.get() != v.payload.size())
      return rv::kSyndromeNakInvalidRequest;  // the suite sends one-packet WRITEs only
    uint8_t* dst = nullptr;
    if (check(v.reth->rkey.get(), v.reth->va.get(), v.payload.size(), Right::kWrite, &dst) != 0)
      return rv::kSyndromeNakRemoteAccess;
    std::memcpy(dst, v.payload.data(), v.payload.size());
    return 0;
  };
  const int32_t d = static_cast<int32_t>((v.psn - c.epsn) << 8) >> 8;  // 24-bit PSN distance
  if (d < 0) return rocev2_answer(c, udp->flow, rv::kSyndromeAck, (c.epsn - 1) & rv::kPsnMask);
  if (d > 0) {
    if (bugs_.place_oos_psn) place();
    if (bugs_.never_nak_oos_psn || (c.nak_sent && !bugs_.nak_every_oos_psn)) return;
    c.nak_sent = true;
    return rocev2_answer(c, udp->flow, rv::kSyndromeNakPsnSeqError, c.epsn);
  }
  if (const uint8_t nak = place(); nak != 0) return rocev2_answer(c, udp->flow, nak, c.epsn);
  c.epsn = (c.epsn + 1) & rv::kPsnMask;
  c.nak_sent = false;
  if (rv::is_last_or_only(v.opcode)) ++c.msn;  // completed messages, not packets (IBTA 9.7.5.1.2)
  if (v.ack_req) rocev2_answer(c, udp->flow, rv::kSyndromeAck, (c.epsn - 1) & rv::kPsnMask);
}

void FakeDut::rocev2_answer(const Conn& c, const mw::UdpFlow& request, uint8_t syndrome, uint32_t psn) {
  namespace rv = mw::rocev2;
  mw::UdpFlow back = request;
  std::swap(back.src_ip, back.dst_ip);
  std::swap(back.src_mac, back.dst_mac);
  back.src_port = 49152;  // the fake QP's source port (entropy); RoCEv2 goes to 4791
  back.dst_port = rv::kUdpPort;
  rv::Aeth aeth{};
  aeth.syndrome = syndrome;
  mw::store_be24(aeth.msn, c.msn & rv::kPsnMask);
  const size_t udp_len = rv::payload_bytes(rv::Opcode::kAcknowledge, 0);
  std::vector<uint8_t> out(mw::kUdpFrameHeaderBytes + udp_len);
  mw::encode_udp_headers(out, back, mw::Ecn::kNotEct, 0, udp_len);
  rv::encode(std::span<uint8_t>(out).subspan(mw::kUdpFrameHeaderBytes), rv::Opcode::kAcknowledge, c.request.tool_id,
             psn, false, nullptr, nullptr, &aeth, {});
  rv::seal_icrc(out);
  rocev2_out_.push_back(std::move(out));
}

std::optional<std::vector<uint8_t>> FakeDut::receive_rocev2(std::chrono::milliseconds) {
  if (rocev2_out_.empty()) return std::nullopt;
  auto f = std::move(rocev2_out_.front());
  rocev2_out_.pop_front();
  return f;
}

void FakeDut::advance(PathRx& p) {
  // cum has arrived: move past it and every contiguous received seq.
  bool next = false;
  do {
    ++p.cum;
    next = p.bits[0];
    p.bits >>= 1;
  } while (next);
}

void FakeDut::on_packet(Conn& c, const mw::PacketView& v, bool ce) {
  if (v.opcode == mw::Opcode::kAck || v.opcode == mw::Opcode::kNak) return;
  const uint8_t path = v.common.path_id;
  if (path >= c.paths.size()) return;
  PathRx& p = c.paths[path];
  const uint32_t seq = v.common.path_seq.get(), floor = v.common.path_floor.get();
  if (seq_diff(floor, seq) > 0 || seq_diff(seq, floor) >= 256) return;  // §10 transport step 3
  if (!bugs_.ignore_path_floor && seq_diff(floor, p.cum) > 0) {
    const uint32_t k = floor - p.cum;
    const bool floor_seen = k - 1 < 256 && p.bits[k - 1];
    p.bits = k >= 256 ? std::bitset<256>() : p.bits >> k;
    p.cum = floor;
    if (floor_seen) advance(p);
  }
  const int32_t d = seq_diff(seq, p.cum);
  if (d > 256) return;
  if (d == 0) advance(p);
  else if (d > 0) p.bits[d - 1] = true;
  if (ce && !bugs_.no_ecn_echo && p.ce < 65535) ++p.ce;
  p.echo = v.common.tx_ts.get();
  p.stream = v.common.stream_id.get();
  if (v.opcode == mw::Opcode::kWrite || v.opcode == mw::Opcode::kWriteImm) on_write(c, v);
  if (v.opcode == mw::Opcode::kFetchAdd || v.opcode == mw::Opcode::kCmpSwap) on_atomic(c, v);
  if (v.opcode == mw::Opcode::kReadReq) on_read(c, v);
  ack(c, path);  // every packet: the fake acknowledges at once
}

void FakeDut::on_write(Conn& c, const mw::PacketView& v) {
  const uint16_t sid = v.common.stream_id.get();
  if (sid >= c.streams.size()) return nak(c.request.tool_id, c.dut_id, v, mw::NakCode::kInvalidRequest);
  Stream& s = c.streams[sid];
  const uint32_t mseq = v.common.msg_seq.get();
  if (seq_diff(mseq, s.base) < 0) return;  // a duplicate of a complete message
  if (seq_diff(mseq, s.base) >= 128) return;
  Msg& m = s.msgs[mseq];
  if (m.failed) return nak(c.request.tool_id, c.dut_id, v, static_cast<mw::NakCode>(m.nak));
  if (s.error) return nak(c.request.tool_id, c.dut_id, v, mw::NakCode::kInvalidRequest);
  const uint32_t off = v.common.msg_offset.get(), len = v.common.msg_len.get();
  const uint32_t plen = static_cast<uint32_t>(v.payload.size()), chunk = c.request.mtu_payload;
  if (len == 0 || len > c.request.max_message_bytes || off % chunk != 0 || plen != std::min(chunk, len - off))
    return nak(c.request.tool_id, c.dut_id, v, mw::NakCode::kInvalidRequest);
  if (m.len == 0) {
    m.len = len;
    m.chunks = (len + chunk - 1) / chunk;
    m.got.assign(m.chunks, false);
    m.imm = v.opcode == mw::Opcode::kWriteImm;
    m.imm_value = v.ext.write.imm.get();
  }
  const uint32_t index = off / chunk;
  const bool duplicate = m.complete || m.got[index];
  if (duplicate && !bugs_.place_duplicates) return;
  const uint64_t addr = v.ext.write.remote_addr.get();
  uint32_t key = v.ext.write.rkey.get();
  if (bugs_.accept_wrong_key && !regions_.count(key)) key = c.key;
  uint8_t* dst = nullptr;
  const uint8_t code = addr < off ? static_cast<uint8_t>(mw::NakCode::kOutOfBounds) : check(key, addr - off, len, Right::kWrite, &dst);
  if (code != 0) {
    m.failed = true;
    m.nak = code;
    s.error = true;  // §8: a fatal NAK puts its stream in error
    return nak(c.request.tool_id, c.dut_id, v, static_cast<mw::NakCode>(code));
  }
  if (off == 0 || !bugs_.place_first_chunk_only) std::memcpy(dst + off, v.payload.data(), plen);
  if (duplicate) return;
  m.got[index] = true;
  ++m.received;
  if (m.received == m.chunks || (bugs_.complete_out_of_order && (v.common.flags & mw::kFlagLast))) m.complete = true;
  if (m.complete && m.imm && bugs_.complete_in_arrival_order) {
    ++s.completions;
    s.completed_imms.push_back(m.imm_value);
  }
  // §11.7: the watermark passes complete messages in msg_seq order.
  for (auto it = s.msgs.find(s.base); it != s.msgs.end() && it->second.complete; it = s.msgs.find(s.base)) {
    if (it->second.imm && !bugs_.complete_in_arrival_order) {
      ++s.completions;
      s.completed_imms.push_back(it->second.imm_value);
    }
    s.msgs.erase(it);
    ++s.base;
  }
}

void FakeDut::on_atomic(Conn& c, const mw::PacketView& v) {
  const uint16_t sid = v.common.stream_id.get();
  if (sid >= c.streams.size()) return nak(c.request.tool_id, c.dut_id, v, mw::NakCode::kInvalidRequest);
  Stream& s = c.streams[sid];
  const uint32_t mseq = v.common.msg_seq.get();
  // §11.12: a request already executed (below the watermark, or complete) is
  // a duplicate and is not executed again.
  const bool duplicate = seq_diff(mseq, s.base) < 0 || (s.msgs.count(mseq) && s.msgs[mseq].complete);
  if (duplicate && !bugs_.replay_atomics) return;
  if (s.error) return nak(c.request.tool_id, c.dut_id, v, mw::NakCode::kInvalidRequest);
  const uint64_t addr = v.ext.atomic.remote_addr.get();
  if (addr % 8 != 0) return nak(c.request.tool_id, c.dut_id, v, mw::NakCode::kInvalidRequest);
  uint8_t* target = nullptr;
  if (const uint8_t code = check(v.ext.atomic.rkey.get(), addr, 8, Right::kAtomic, &target); code != 0) {
    s.error = true;
    return nak(c.request.tool_id, c.dut_id, v, static_cast<mw::NakCode>(code));
  }
  const uint64_t original = load_u64(target);
  const bool cas = v.opcode == mw::Opcode::kCmpSwap;
  const uint64_t updated = !cas ? original + v.ext.atomic.operand.get()
                           : (original == v.ext.atomic.compare.get() || bugs_.swap_without_compare) ? v.ext.atomic.operand.get()
                                                                                                     : original;
  std::memcpy(target, &updated, 8);
  if (!duplicate) {
    s.msgs[mseq].complete = true;
    for (auto it = s.msgs.find(s.base); it != s.msgs.end() && it->second.complete; it = s.msgs.find(s.base)) {
      s.msgs.erase(it);
      ++s.base;
    }
  }
  mw::CommonHeader h{};
  h.version = mw::kVersion << 4;
  h.opcode = static_cast<uint8_t>(mw::Opcode::kAtomicResp);
  h.flags = mw::kFlagAckReq | mw::kFlagFirst | mw::kFlagLast;
  h.dst_conn_id.set(c.request.tool_id);
  h.src_conn_id.set(c.dut_id);
  h.stream_id.set(sid);
  h.path_seq.set(c.tx_seq);
  h.path_floor.set(c.tx_seq);  // the fake never retransmits: everything before is given up
  ++c.tx_seq;
  h.msg_seq.set(mseq);
  h.tx_ts.set(1);
  mw::AtomicRespExt e{};
  e.original.set(original);
  std::vector<uint8_t> out(mw::packet_bytes(mw::Opcode::kAtomicResp, 0));
  mw::encode_packet(out, h, &e, sizeof e, {});
  out_.push_back(std::move(out));
}

void FakeDut::on_read(Conn& c, const mw::PacketView& v) {
  const uint16_t sid = v.common.stream_id.get();
  if (sid >= c.streams.size()) return nak(c.request.tool_id, c.dut_id, v, mw::NakCode::kInvalidRequest);
  Stream& s = c.streams[sid];
  const uint32_t mseq = v.common.msg_seq.get();
  if (seq_diff(mseq, s.base) < 0 || (s.msgs.count(mseq) && s.msgs[mseq].complete)) return;  // executed once
  if (s.error) return nak(c.request.tool_id, c.dut_id, v, mw::NakCode::kInvalidRequest);
  const uint32_t len = v.ext.read_req.length.get();
  if (len > c.request.max_message_bytes) return nak(c.request.tool_id, c.dut_id, v, mw::NakCode::kInvalidRequest);
  uint8_t* src = nullptr;
  if (const uint8_t code = check(v.ext.read_req.rkey.get(), v.ext.read_req.remote_addr.get(), len, Right::kRead, &src);
      code != 0) {
    s.error = true;
    return nak(c.request.tool_id, c.dut_id, v, static_cast<mw::NakCode>(code));
  }
  // Executed in stream order: the fake answers only when every earlier
  // message of the stream is complete (the cases never need it to wait).
  s.msgs[mseq].complete = true;
  for (auto it = s.msgs.find(s.base); it != s.msgs.end() && it->second.complete; it = s.msgs.find(s.base)) {
    s.msgs.erase(it);
    ++s.base;
  }
  for (uint32_t off = 0; off < len; off += c.request.mtu_payload) {
    const uint32_t plen = std::min(c.request.mtu_payload, len - off);
    mw::CommonHeader h{};
    h.version = mw::kVersion << 4;
    h.opcode = static_cast<uint8_t>(mw::Opcode::kReadResp);
    h.flags = static_cast<uint8_t>((off == 0 ? mw::kFlagFirst : 0) | (off + plen == len ? mw::kFlagLast | mw::kFlagAckReq : 0));
    h.dst_conn_id.set(c.request.tool_id);
    h.src_conn_id.set(c.dut_id);
    h.stream_id.set(sid);
    h.payload_len.set(static_cast<uint16_t>(plen));
    h.path_seq.set(c.tx_seq);
    h.path_floor.set(c.tx_seq);
    ++c.tx_seq;
    h.msg_seq.set(mseq);
    h.msg_offset.set(off);
    h.msg_len.set(len);
    h.tx_ts.set(1);
    std::vector<uint8_t> out(mw::packet_bytes(mw::Opcode::kReadResp, plen));
    mw::encode_packet(out, h, nullptr, 0, std::span<const uint8_t>(src + off, plen));
    out_.push_back(std::move(out));
  }
}

void FakeDut::ack(Conn& c, uint8_t path) {
  PathRx& p = c.paths[path];
  mw::CommonHeader h{};
  h.version = mw::kVersion << 4;
  h.opcode = static_cast<uint8_t>(mw::Opcode::kAck);
  h.path_id = path;
  h.dst_conn_id.set(c.request.tool_id);
  h.src_conn_id.set(c.dut_id);
  h.stream_id.set(p.stream);
  h.msg_seq.set(p.stream < c.streams.size() ? c.streams[p.stream].base : 0);
  h.tx_ts.set(1);
  mw::AckExt e{};
  e.rate_hint_kbps.set(bugs_.no_rate_hint ? 0 : static_cast<uint32_t>(capacity_bps_ / 1000));
  e.num_blocks = 1;
  mw::AckBlock b{};
  b.path_id = path;
  b.flags = p.ce ? mw::kAckFlagEce : 0;
  b.ecn_count.set(p.ce);
  b.cum_seq.set(p.cum);
  b.echo_ts.set(p.echo);
  if (!bugs_.ignore_sack_gaps)
    for (size_t i = 0; i < 256; ++i)
      if (p.bits[i]) mw::sack_set(b.sack, i);
  p.ce = 0;  // §6.2: the count restarts after every block
  std::vector<uint8_t> out(mw::packet_bytes(mw::Opcode::kAck, 0, 1));
  mw::encode_packet(out, h, &e, sizeof e, {}, std::span<const mw::AckBlock>(&b, 1));
  out_.push_back(std::move(out));
}

void FakeDut::nak(uint32_t dst, uint32_t src, const mw::PacketView& v, mw::NakCode code) {
  mw::CommonHeader h{};
  h.version = mw::kVersion << 4;
  h.opcode = static_cast<uint8_t>(mw::Opcode::kNak);
  h.path_id = v.common.path_id;
  h.dst_conn_id.set(dst);
  h.src_conn_id.set(src);
  h.stream_id.set(v.common.stream_id.get());
  h.tx_ts.set(1);
  mw::NakExt e{};
  e.code = static_cast<uint8_t>(code);
  e.stream_id.set(v.common.stream_id.get());
  e.msg_seq.set(v.common.msg_seq.get());
  e.msg_offset.set(v.common.msg_offset.get());
  std::vector<uint8_t> out(mw::packet_bytes(mw::Opcode::kNak, 0));
  mw::encode_packet(out, h, &e, sizeof e, {});
  out_.push_back(std::move(out));
}

mc::SenderConnection FakeDut::start_sender(const mc::SenderJob& job, std::chrono::milliseconds) {
  Sender s;
  s.conn.dut_id = next_id_++;
  s.conn.tool_id = job.tool_id;
  s.conn.seed = 0x5EED0000ull | s.conn.dut_id;
  s.conn.job_id = s.conn.dut_id;
  s.conn.job = job;
  s.outcome.state = "RUNNING";
  Sender& stored = senders_[s.conn.dut_id] = s;
  post_messages(stored);
  return stored.conn;
}

void FakeDut::post_messages(Sender& s) {
  const mc::SenderJob& j = s.conn.job;
  if (j.operation == "read") {
    for (; s.posted < j.messages && s.posted - s.completed < j.queue_depth; ++s.posted) {
      mw::CommonHeader h{};
      h.version = mw::kVersion << 4;
      h.opcode = static_cast<uint8_t>(mw::Opcode::kReadReq);
      h.flags = mw::kFlagAckReq | mw::kFlagFirst | mw::kFlagLast;
      h.dst_conn_id.set(s.conn.tool_id);
      h.src_conn_id.set(s.conn.dut_id);
      const uint32_t seq = s.next_seq++;
      h.path_seq.set(seq);
      h.path_floor.set(seq);  // nothing before it is outstanding here: the suite loses none of these
      h.msg_seq.set(static_cast<uint32_t>(s.posted));
      h.tx_ts.set(seq + 1);
      mw::ReadReqExt r{};
      r.remote_addr.set(j.region_addr + (s.posted % slots_per_stream(j.queue_depth)) * slot_bytes(j.max_message_bytes));
      r.rkey.set(j.rkey);
      r.length.set(j.message_bytes);
      std::vector<uint8_t> out(mw::packet_bytes(mw::Opcode::kReadReq, 0));
      mw::encode_packet(out, h, &r, sizeof r, {});
      out_.push_back(std::move(out));
    }
    return;
  }
  for (; s.posted < j.messages && s.posted - s.watermark < j.queue_depth; ++s.posted)
    for (uint32_t off = 0; off < j.message_bytes; off += j.mtu_payload)
      transmit(s, static_cast<uint32_t>(s.posted), off, false);
}

void FakeDut::on_read_response(Sender& s, const mw::PacketView& v) {
  const uint32_t msg = v.common.msg_seq.get();
  if (msg >= s.posted || s.arrived.count(msg)) return;
  auto& got = s.responses[msg];
  got.insert(v.common.msg_offset.get());
  if (got.size() * s.conn.job.mtu_payload < s.conn.job.message_bytes) return;
  s.arrived.insert(msg);
  if (bugs_.complete_reads_in_arrival_order) return complete(s, msg);
  // §11.11: in post order.
  while (s.arrived.count(static_cast<uint32_t>(s.completed))) complete(s, static_cast<uint32_t>(s.completed));
}

// A READ completion, checked as metaroced's traffic job checks it: in post order.
void FakeDut::complete(Sender& s, uint32_t msg) {
  if (s.outcome.ended) return;
  if (msg != s.completed) {
    s.outcome.ended = true;
    s.outcome.state = "FAILED";
    s.outcome.error = "stream 0 message " + std::to_string(s.completed) + ": completion out of post order";
    return;
  }
  ++s.completed;
  if (s.completed == s.conn.job.messages) {
    s.outcome.ended = true;
    s.outcome.state = "DONE";
    return;
  }
  post_messages(s);
}

void FakeDut::transmit(Sender& s, uint32_t msg, uint32_t off, bool retx, std::optional<uint32_t> reuse) {
  const mc::SenderJob& j = s.conn.job;
  const uint32_t plen = std::min(j.mtu_payload, j.message_bytes - off);
  const uint32_t seq = reuse ? *reuse : s.next_seq++;
  uint32_t floor = s.next_seq;  // the lowest unresolved seq
  for (const auto& [q, tx] : s.txs)
    if (!tx.resolved && seq_diff(q, floor) < 0) floor = q;
  if (seq_diff(seq, floor) < 0) floor = seq;
  s.txs[seq] = Tx{msg, off, false};
  const uint32_t sb = slot_bytes(j.max_message_bytes);
  const uint64_t slot = msg % slots_per_stream(j.queue_depth);
  std::vector<uint8_t> payload(plen);
  for (uint32_t i = 0; i < plen; ++i) {
    const uint32_t b = off + i;
    const uint64_t word = b < 8 ? mc::message_header(0, msg) : mc::pattern_word(s.conn.seed, slot, b / 8);
    payload[i] = static_cast<uint8_t>(word >> (8 * (b % 8)));
  }
  mw::CommonHeader h{};
  h.version = mw::kVersion << 4;
  h.opcode = static_cast<uint8_t>(mw::Opcode::kWrite);
  h.flags = static_cast<uint8_t>((off == 0 ? mw::kFlagFirst : 0) |
                                 (off + plen == j.message_bytes ? mw::kFlagLast | mw::kFlagAckReq : 0) |
                                 (retx ? mw::kFlagRetx : 0));
  h.dst_conn_id.set(s.conn.tool_id);
  h.src_conn_id.set(s.conn.dut_id);
  h.payload_len.set(static_cast<uint16_t>(plen));
  h.path_seq.set(seq);
  h.path_floor.set(floor);
  h.msg_seq.set(msg);
  h.msg_offset.set(off);
  h.msg_len.set(j.message_bytes);
  h.tx_ts.set(seq + 1);
  mw::WriteExt w{};
  w.remote_addr.set(j.region_addr + slot * sb + off);
  w.rkey.set(j.rkey);
  std::vector<uint8_t> out(mw::packet_bytes(mw::Opcode::kWrite, plen));
  mw::encode_packet(out, h, &w, sizeof w, payload);
  out_.push_back(std::move(out));
}

void FakeDut::on_sender_ack(Sender& s, const mw::PacketView& v) {
  for (const mw::AckBlock& b : v.ack_blocks) {
    if (b.path_id != 0) continue;
    const uint32_t cum = b.cum_seq.get();
    if (seq_diff(cum, s.next_seq) > 0) continue;  // §6.2: a block beyond what was sent is ignored
    bool any = false;
    uint32_t highest = 0;  // the highest seq the block acknowledges
    auto acked = [&](uint32_t q) {
      const int32_t d = seq_diff(q, cum);
      return d < 0 || (d > 0 && d - 1 < 256 && mw::sack_test(b.sack, static_cast<uint32_t>(d - 1)));
    };
    for (auto& [q, tx] : s.txs)
      if (acked(q)) {
        tx.resolved = true;
        if (!any || seq_diff(q, highest) > 0) highest = q;
        any = true;
      }
    if (!any) continue;
    // §11.4: an outstanding seq before the highest acknowledged one is lost.
    std::vector<uint32_t> lost;
    for (const auto& [q, tx] : s.txs)
      if (!tx.resolved && seq_diff(q, highest) < 0) lost.push_back(q);
    if (lost.empty() || bugs_.no_fast_retransmit) continue;
    std::vector<std::pair<uint32_t, std::optional<uint32_t>>> resend;  // chunk key (seq), reused seq
    if (bugs_.go_back_n) {
      for (const auto& [q, tx] : s.txs)
        if (seq_diff(q, lost.front()) >= 0) resend.push_back({q, std::nullopt});
    } else {
      for (uint32_t q : lost)
        resend.push_back({q, bugs_.retransmit_same_seq ? std::optional<uint32_t>(q) : std::nullopt});
    }
    for (const auto& [q, reuse] : resend) {
      Tx& tx = s.txs[q];
      tx.resolved = true;
      ++s.retransmits;
      transmit(s, tx.msg, tx.offset, true, reuse);
    }
  }
  if (v.common.stream_id.get() == 0 && seq_diff(v.common.msg_seq.get(), static_cast<uint32_t>(s.watermark)) > 0)
    s.watermark = v.common.msg_seq.get();
  if (s.conn.job.operation == "read") return;  // READs complete on their responses
  if (s.watermark >= s.conn.job.messages) {
    s.outcome.ended = true;
    s.outcome.state = "DONE";
    s.outcome.retransmits = s.retransmits;
  } else {
    post_messages(s);
  }
}

mc::SenderOutcome FakeDut::finish_sender(const mc::SenderConnection& c, std::chrono::milliseconds) {
  if (auto it = ended_.find(c.job_id); it != ended_.end()) return it->second;
  auto it = senders_.find(c.dut_id);
  return it == senders_.end() ? mc::SenderOutcome{false, "unknown job"} : it->second.outcome;
}

void FakeDut::stop_sender(const mc::SenderConnection& c) { senders_.erase(c.dut_id); }

std::optional<std::vector<uint8_t>> FakeDut::receive(std::chrono::milliseconds) {
  if (out_.empty()) return std::nullopt;
  auto p = std::move(out_.front());
  out_.pop_front();
  return p;
}

mc::VerifyOutcome FakeDut::verify(const mc::DutConnection& connection, const std::string& operation,
                                  uint32_t, const std::vector<uint64_t>& stream_end) {
  mc::VerifyOutcome v;
  auto it = conns_.find(connection.dut_id);
  if (it == conns_.end() || stream_end.size() != it->second.streams.size()) {
    v.detail = "no such connection, or the wrong number of streams";
    return v;
  }
  const Conn& c = it->second;
  const Region& region = regions_.at(c.key);
  const uint32_t sps = slots_per_stream(c.request), sb = slot_bytes(c.request);
  auto mismatch = [&](std::string d) {
    ++v.mismatches;
    if (v.detail.empty()) v.detail = std::move(d);
  };
  uint64_t total = 0;
  for (uint32_t s = 0; s < c.streams.size(); ++s) {
    const uint64_t n = stream_end[s];
    total += n;
    v.received_messages += c.streams[s].completions;
    for (uint32_t j = 0; j < sps; ++j) {
      const uint64_t slot = uint64_t{s} * sps + j;
      const uint8_t* p = region.bytes.data() + slot * sb;
      v.checked_bytes += sb;
      // As Peer.Verify: the slot holds the last completed message that used
      // it, or one in flight (at most queue_depth beyond), or the pattern.
      const bool writes = operation == "write" || operation == "write_imm";
      uint64_t msg = UINT64_MAX;
      if (writes && j < n) msg = j + (n - 1 - j) / sps * sps;
      const uint64_t later = msg == UINT64_MAX ? j : msg + sps;
      if (writes && later < n + c.request.queue_depth && load_u64(p) == mc::message_header(s, later)) msg = later;
      if (msg == UINT64_MAX) {
        if (pattern_mismatch(p, sb, c.request.seed, slot, 0) >= 0)
          mismatch("stream " + std::to_string(s) + " slot " + std::to_string(slot) + " (no message) differs");
        continue;
      }
      if (load_u64(p) != mc::message_header(s, msg) || pattern_mismatch(p, sb, c.request.seed, slot, 8) >= 0)
        mismatch("stream " + std::to_string(s) + " slot " + std::to_string(slot) + " message " + std::to_string(msg) +
                 " differs");
    }
  }
  if (operation == "fetch_add")
    for (uint32_t s = 0; s < c.streams.size(); ++s) {
      const uint64_t counter = load_u64(region.bytes.data() + uint64_t{c.streams.size()} * sps * sb + 8ull * s);
      v.checked_bytes += 8;
      if (counter < stream_end[s] || counter > stream_end[s] + c.request.queue_depth)
        mismatch("stream " + std::to_string(s) + ": counter is " + std::to_string(counter));
    }
  if (operation == "write_imm")
    for (uint32_t s = 0; s < c.streams.size(); ++s)
      for (size_t n = 0; n < c.streams[s].completed_imms.size(); ++n)
        if (c.streams[s].completed_imms[n] != n)
          mismatch("stream " + std::to_string(s) + " completion " + std::to_string(n) + ": immediate " +
                   std::to_string(c.streams[s].completed_imms[n]));
  if (operation == "write_imm" && v.received_messages != total)
    mismatch("received " + std::to_string(v.received_messages) + " messages, the requester completed " +
             std::to_string(total));
  v.ok = v.mismatches == 0;
  return v;
}

}  // namespace conformance_test
