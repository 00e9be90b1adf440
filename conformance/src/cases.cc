// The catalogue: one function per case, each tied to the spec sections it
// checks (docs/spec/metaroce-wire-v1.md). Every case builds its own packets,
// waits for the DUT's answers up to a fence (an ACK_REQ packet whose tx_ts the
// DUT echoes), and checks the answers and, through Peer.Verify, the memory.
//
// Payloads that must NOT land are poison (0xD5 bytes): if a DUT placed one,
// Peer.Verify would see it (a slot holds the pattern or a whole message, never
// poison). Payloads that must land carry the pattern with the message's header
// in word 0, which is how Peer.Verify tells a written slot from an untouched one.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "case_context.h"

namespace metaroce::conformance {
namespace {

namespace mw = metaroce::wire;

constexpr uint32_t kChunk = 256;  // ConnectionRequest::mtu_payload default

// The NAK header and extension of §8 for a refused WRITE.
void expect_nak(CaseContext& ctx, const Answer& nak, const DutConnection& c, mw::NakCode code, uint16_t stream,
                uint32_t msg_seq, uint32_t msg_offset, uint32_t src_conn) {
  const auto& h = nak.view.common;
  const auto& e = nak.view.ext.nak;
  const std::string seen = describe_packet(*nak.bytes);
  ctx.expect(e.code == static_cast<uint8_t>(code),
             format("NAK code %s (0x%02x)", std::string(mw::nak_code_name(code)).c_str(), static_cast<unsigned>(code)),
             seen);
  ctx.expect(h.dst_conn_id.get() == c.tool_id && h.src_conn_id.get() == src_conn,
             format("NAK dst_conn_id 0x%06x (the sender's id) and src_conn_id 0x%06x (§3, §8)", c.tool_id, src_conn), seen);
  ctx.expect(h.stream_id.get() == stream && e.stream_id.get() == stream && e.msg_seq.get() == msg_seq &&
                 e.msg_offset.get() == msg_offset,
             format("NAK naming stream %u message %u offset %u in its header and NakExt (§5.7, §8)", stream, msg_seq,
                    msg_offset),
             seen);
}

void expect_untouched(CaseContext& ctx, const DutConnection& c, uint32_t streams, const std::string& why) {
  const VerifyOutcome v = ctx.verify(c, "write", kChunk, std::vector<uint64_t>(streams, 0));
  ctx.expect(v.ok, "the target region untouched (" + why + ")", "Peer.Verify: " + v.detail);
}

// ---------------------------------------------------------------- placement

void placement_in_order(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  uint32_t last_ts = 0;
  for (uint32_t m = 0; m < 4; ++m) last_ts = ctx.send(ctx.write_chunk(c, 0, m, kChunk, 0, 0, m, 0));
  const AckSeen a = ctx.await_ack(c, 0, last_ts, "the last of 4 one-packet WRITEs");
  ctx.expect_no_nak("for valid WRITEs");
  ctx.expect_block(a, 4, {}, "after seqs 0-3 in order");
  const auto& h = a.ack->view.common;
  ctx.expect(h.stream_id.get() == 0 && h.msg_seq.get() == 4, "watermark 4 on stream 0 (messages 0-3 complete, §6.3)",
             format("stream %u watermark %u", h.stream_id.get(), h.msg_seq.get()));
  const VerifyOutcome v = ctx.verify(c, "write", kChunk, {4});
  ctx.expect(v.ok, "messages 0-3 placed in their slots (§11.1)", "Peer.Verify: " + v.detail);
}

void placement_out_of_order(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  // 4 messages of 2 chunks, sent messages and chunks scrambled, and the path's
  // seqs swapped in pairs (the path itself reorders): message 0's first chunk
  // comes last.
  const uint32_t order[8][2] = {{1, 1}, {3, 0}, {0, 1}, {2, 1}, {1, 0}, {3, 1}, {2, 0}, {0, 0}};
  const uint32_t seqs[8] = {1, 0, 3, 2, 5, 4, 7, 6};
  // The 7th packet is a fence (ACK_REQ, and nothing sent after it until its
  // echo arrives: a DUT may answer a burst with one ACK for its last packet).
  uint32_t ts[8] = {};
  auto send_packet = [&](int i) {
    Outgoing o = ctx.write_chunk(c, 0, order[i][0], 2 * kChunk, order[i][1], 0, seqs[i], 0);
    if (i >= 6) o.flags |= mw::kFlagAckReq;  // the two answers the case reads
    ts[i] = ctx.send(o);
  };
  for (int i = 0; i < 7; ++i) send_packet(i);
  const AckSeen before = ctx.await_ack(c, 0, ts[6], "the 7th packet, message 0's first chunk still missing");
  send_packet(7);
  const auto& hb = before.ack->view.common;
  ctx.expect(hb.msg_seq.get() == 0,
             "watermark 0 while message 0 lacks a chunk (every message before the watermark is complete, §6.3, §11.7)",
             format("watermark %u", hb.msg_seq.get()));
  const AckSeen after = ctx.await_ack(c, 0, ts[7], "the last packet, message 0's first chunk");
  ctx.expect_no_nak("for valid WRITEs in any order");
  ctx.expect_block(after, 8, {}, "after seqs 0-7 in swapped pairs");
  ctx.expect(after.ack->view.common.msg_seq.get() == 4, "watermark 4 once every chunk is placed (§11.7)",
             format("watermark %u", after.ack->view.common.msg_seq.get()));
  const VerifyOutcome v = ctx.verify(c, "write", 2 * kChunk, {4});
  ctx.expect(v.ok, "messages 0-3 placed where their packets said, in any order (§11.1)", "Peer.Verify: " + v.detail);
}

void placement_duplicate(CaseContext& ctx) {
  ConnectionRequest r;
  r.recv_message_bytes = 1024;  // WRITE_IMM completions are counted by Peer.Verify
  const DutConnection& c = ctx.open(r);
  auto write_imm = [&](uint32_t msg, uint32_t len, uint32_t chunk, uint32_t seq) {
    Outgoing o = ctx.write_chunk(c, 0, msg, len, chunk, 0, seq, 0);
    o.op = mw::Opcode::kWriteImm;
    o.imm = msg;  // Peer.Verify's WRITE_IMM contract: the immediate is the message index
    return o;
  };
  // Message 0: sent, duplicated by the fabric (same seq), then resent under a
  // fresh seq with RETX and a different payload (which must not land).
  const Built first = ctx.build(write_imm(0, kChunk, 0, 0));
  ctx.send_bytes(first, "message 0");
  ctx.send_bytes(first, "the same packet again: a fabric duplicate");
  Outgoing resend = write_imm(0, kChunk, 0, 1);
  resend.flags |= mw::kFlagRetx;
  resend.payload = CaseContext::poison(kChunk);
  ctx.send(resend);
  // Message 1, two chunks: chunk 0, chunk 0 again (poison, RETX), chunk 1.
  ctx.send(write_imm(1, 2 * kChunk, 0, 2));
  Outgoing again = write_imm(1, 2 * kChunk, 0, 3);
  again.flags |= mw::kFlagRetx;
  again.payload = CaseContext::poison(kChunk);
  ctx.send(again);
  const uint32_t last = ctx.send(write_imm(1, 2 * kChunk, 1, 4));
  const AckSeen a = ctx.await_ack(c, 0, last, "message 1's last chunk");
  ctx.expect_no_nak("for duplicates (acknowledged, neither placed nor executed again, §11.7)");
  ctx.expect_block(a, 5, {}, "after seqs 0, 0, 1-4 (every transmission acknowledged at path level, §10)");
  ctx.expect(a.ack->view.common.msg_seq.get() == 2, "watermark 2", format("watermark %u", a.ack->view.common.msg_seq.get()));
  const VerifyOutcome v = ctx.verify(c, "write_imm", kChunk, {2});
  ctx.expect(v.ok && v.received_messages == 2,
             "2 WRITE_IMM completions and the first copies' bytes in place (a duplicate is neither placed nor "
             "completed again, §11.7)",
             format("%" PRIu64 " completions; Peer.Verify: %s", v.received_messages, v.detail.c_str()));
}

void completion_stream_order(CaseContext& ctx) {
  ConnectionRequest r;
  r.streams = 2;
  r.recv_message_bytes = 1024;  // WRITE_IMM completions are checked by Peer.Verify
  const DutConnection& c = ctx.open(r);
  // Peer.Verify's WRITE_IMM contract: the n-th receive completion of a stream
  // must carry immediate n. Messages arrive last first, streams interleaved.
  const uint32_t order[5][2] = {{0, 2}, {1, 1}, {0, 1}, {1, 0}, {0, 0}};  // {stream, message}
  uint32_t ts = 0;
  for (uint32_t i = 0; i < 5; ++i) {
    Outgoing o = ctx.write_chunk(c, static_cast<uint16_t>(order[i][0]), order[i][1], kChunk, 0, 0, i, 0);
    o.op = mw::Opcode::kWriteImm;
    o.imm = order[i][1];
    ts = ctx.send(o);
  }
  const AckSeen a = ctx.await_ack(c, 0, ts, "stream 0 message 0, the last sent");
  ctx.expect_no_nak("for valid WRITE_IMMs in any order");
  ctx.expect(a.ack->view.common.stream_id.get() == 0 && a.ack->view.common.msg_seq.get() == 3,
             "stream 0's watermark 3", format("stream %u watermark %u", a.ack->view.common.stream_id.get(),
                                              a.ack->view.common.msg_seq.get()));
  const VerifyOutcome v = ctx.verify(c, "write_imm", kChunk, {3, 2});
  ctx.expect(v.ok && v.received_messages == 5,
             "5 receive completions, each stream's in msg_seq order (the n-th carrying immediate n, §11.7, §11.11)",
             format("%" PRIu64 " completions; Peer.Verify: %s", v.received_messages, v.detail.c_str()));
}

// ---------------------------------------------------------------- SACK

void sack_gaps(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  uint32_t ts = 0;
  for (uint32_t seq : {0u, 2u, 3u, 5u, 9u}) ts = ctx.send(ctx.probe(c, 0, seq, 0));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 9"), 1, {0, 1, 3, 7}, "after seqs 0, 2, 3, 5, 9");
  ts = ctx.send(ctx.probe(c, 0, 1, 0));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 1"), 4, {0, 4}, "after the hole at 1 is filled");
  ts = ctx.send(ctx.probe(c, 0, 4, 0));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 4"), 6, {2}, "after 4 arrives");
  // Another path has its own sequence space (§11.3): path 0's gaps are not its.
  ts = ctx.send(ctx.probe(c, 1, 0, 0));
  ctx.expect_block(ctx.await_ack(c, 1, ts, "path 1 seq 0"), 1, {}, "path 1 after its seq 0");
  ctx.expect_no_nak("for PROBEs");
}

void sack_window_edge(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  uint32_t ts = ctx.send(ctx.probe(c, 0, 255, 0));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 255"), 0, {254}, "after seq 255 (floor 0: the window's last seq)");
  const uint32_t beyond = ctx.send(ctx.probe(c, 0, 256, 0));
  ts = ctx.send(ctx.probe(c, 0, 1, 0));
  const AckSeen fence = ctx.await_ack(c, 0, ts, "seq 1, the fence after seq 256");
  for (const AckSeen& s : ctx.blocks(c, 0))
    ctx.expect(s.block.echo_ts.get() != beyond,
               "no ACK for seq 256 with floor 0 (path_seq - path_floor >= 256 is dropped, §3, §10)",
               describe_packet(*s.ack->bytes));
  ctx.expect_block(fence, 0, {0, 254}, "after seqs 255, 256 (dropped), 1");
  ts = ctx.send(ctx.probe(c, 0, 0, 0));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 0"), 2, {252}, "after seq 0 (cum runs over 0 and 1)");
  ts = ctx.send(ctx.probe(c, 0, 257, 2));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 257 floor 2"), 2, {252, 254},
                   "after seq 257 with floor 2 (cum 2 + 256 - 1: the last bit of the bitmap)");
  ctx.expect_no_nak("for PROBEs");
}

void sack_floor_slide(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  ctx.send(ctx.probe(c, 0, 0, 0));
  uint32_t ts = ctx.send(ctx.probe(c, 0, 2, 0));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 2"), 1, {0}, "after seqs 0, 2");
  // The sender gave seq 1 up (resent elsewhere): floor 2. The receiver moves
  // cum to 2, and past it since 2 arrived.
  ts = ctx.send(ctx.probe(c, 0, 5, 2));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 5 floor 2"), 3, {1}, "after floor 2 (cum slides to 2, runs to 3)");
  ts = ctx.send(ctx.probe(c, 0, 6, 6));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 6 floor 6"), 7, {}, "after floor 6 (3-5 resolved by the sender)");
  ctx.expect_no_nak("for PROBEs");
}

void sack_sequence_wrap(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  // Two forward floor jumps of less than 2^31 (serial arithmetic: anything
  // further would be "before") bring the path near 2^32.
  uint32_t ts = ctx.send(ctx.probe(c, 0, 0x7FFFFFF8u, 0x7FFFFFF8u));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 0x7ffffff8"), 0x7FFFFFF9u, {}, "after floor and seq 0x7ffffff8");
  ts = ctx.send(ctx.probe(c, 0, 0xFFFFFFF0u, 0xFFFFFFF0u));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 0xfffffff0"), 0xFFFFFFF1u, {}, "after floor and seq 0xfffffff0");
  const uint32_t floor = 0xFFFFFFF1u;
  ctx.send(ctx.probe(c, 0, 0xFFFFFFFFu, floor));
  ts = ctx.send(ctx.probe(c, 0, 1, floor));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 1 after the wrap"), 0xFFFFFFF1u, {13, 15},
                   "after seqs 0xffffffff and 1 (bits cum+1+13 and cum+1+15 across 2^32, §3)");
  for (uint32_t seq = 0xFFFFFFF1u; seq != 0xFFFFFFFFu; ++seq) ctx.send(ctx.probe(c, 0, seq, floor));
  ts = ctx.send(ctx.probe(c, 0, 0, floor));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 0"), 2, {}, "after every seq from 0xfffffff1 to 1 (cum wraps to 2)");
  ctx.expect_no_nak("for PROBEs");
}

// ---------------------------------------------------------------- NAK codes

void nak_bad_key(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  Outgoing o = ctx.write_chunk(c, 0, 0, kChunk, 0, 0, 0, 0);
  o.rkey ^= 0x5A5A0000u;
  o.payload = CaseContext::poison(kChunk);
  const uint32_t ts = ctx.send(o);
  const Answer& nak = ctx.await_nak(c.tool_id, 0, 0, "a WRITE under a key that names no region");
  expect_nak(ctx, nak, c, mw::NakCode::kBadKey, 0, 0, 0, c.dut_id);
  ctx.expect_block(ctx.await_ack(c, 0, ts, "the refused WRITE"), 1, {},
                   "the refused packet acknowledged at path level (§10 transport step 3)");
  expect_untouched(ctx, c, 1, "a refused WRITE places nothing");
}

void nak_out_of_bounds(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  Outgoing o = ctx.write_chunk(c, 0, 0, kChunk, 0, 0, 0, 0);
  o.remote_addr = c.remote_addr + c.remote_length - kChunk / 2;  // half inside, half past the end
  o.payload = CaseContext::poison(kChunk);
  const uint32_t ts = ctx.send(o);
  const Answer& nak = ctx.await_nak(c.tool_id, 0, 0, "a WRITE running past the region's end");
  expect_nak(ctx, nak, c, mw::NakCode::kOutOfBounds, 0, 0, 0, c.dut_id);
  ctx.expect_block(ctx.await_ack(c, 0, ts, "the refused WRITE"), 1, {}, "the refused packet acknowledged at path level");
  expect_untouched(ctx, c, 1, "not even the part inside the region is placed");
}

void nak_access_violation(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  const DutRegion ro = ctx.register_region(4096, {"remote_read"});
  Outgoing o = ctx.write_chunk(c, 0, 0, kChunk, 0, 0, 0, 0);
  o.remote_addr = ro.addr;
  o.rkey = ro.key;
  o.payload = CaseContext::poison(kChunk);
  const uint32_t ts = ctx.send(o);
  const Answer& nak = ctx.await_nak(c.tool_id, 0, 0, "a WRITE into a region without remote_write");
  expect_nak(ctx, nak, c, mw::NakCode::kAccessViolation, 0, 0, 0, c.dut_id);
  ctx.expect_block(ctx.await_ack(c, 0, ts, "the refused WRITE"), 1, {}, "the refused packet acknowledged at path level");
}

void nak_unknown_connection(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  Outgoing o = ctx.write_chunk(c, 0, 0, kChunk, 0, 0, 0, 0);
  o.dst_conn = c.dut_id ^ 0x800001u;  // a connection id the DUT did not give out
  o.payload = CaseContext::poison(kChunk);
  const uint32_t bogus = ctx.send(o);
  const Answer& nak = ctx.await_nak(c.tool_id, 0, 0, "a WRITE to an unknown connection id");
  expect_nak(ctx, nak, c, mw::NakCode::kUnknownConnection, 0, 0, 0, 0);
  // Fence on the real connection: the bogus packet's seq 0 is not its.
  const uint32_t ts = ctx.send(ctx.probe(c, 0, 1, 0));
  ctx.expect_block(ctx.await_ack(c, 0, ts, "seq 1 on the real connection"), 0, {0},
                   "seq 0 of the unknown connection not recorded on the real one");
  for (const AckSeen& s : ctx.blocks(c, 0))
    ctx.expect(s.block.echo_ts.get() != bogus, "no ACK for a packet to an unknown connection (§8: only the NAK)",
               describe_packet(*s.ack->bytes));
  expect_untouched(ctx, c, 1, "a packet for an unknown connection places nothing");
}

void nak_stream_error(CaseContext& ctx) {
  ConnectionRequest r;
  r.streams = 2;
  const DutConnection& c = ctx.open(r);
  Outgoing bad = ctx.write_chunk(c, 0, 0, kChunk, 0, 0, 0, 0);
  bad.rkey ^= 0x5A5A0000u;
  bad.payload = CaseContext::poison(kChunk);
  ctx.send(bad);
  expect_nak(ctx, ctx.await_nak(c.tool_id, 0, 0, "stream 0 message 0 under a bad key"), c, mw::NakCode::kBadKey, 0, 0,
             0, c.dut_id);
  // Stream 0 is in error: its next message is refused whole (poison, so a
  // placement would show); stream 1 carries on.
  Outgoing next = ctx.write_chunk(c, 0, 1, kChunk, 0, 0, 1, 0);
  next.payload = CaseContext::poison(kChunk);
  ctx.send(next);
  expect_nak(ctx, ctx.await_nak(c.tool_id, 0, 1, "stream 0 message 1 after the fatal NAK"), c,
             mw::NakCode::kInvalidRequest, 0, 1, 0, c.dut_id);
  const uint32_t ts = ctx.send(ctx.write_chunk(c, 1, 0, kChunk, 0, 0, 2, 0));
  const AckSeen a = ctx.await_ack(c, 0, ts, "stream 1 message 0");
  ctx.expect(a.ack->view.common.stream_id.get() == 1 && a.ack->view.common.msg_seq.get() == 1,
             "stream 1's watermark 1 (a fatal NAK stops only its own stream, §8, §11.11)",
             format("stream %u watermark %u", a.ack->view.common.stream_id.get(), a.ack->view.common.msg_seq.get()));
  for (const Answer* n : ctx.naks())
    ctx.expect(n->view.ext.nak.stream_id.get() == 0, "no NAK on stream 1", describe_packet(*n->bytes));
  const VerifyOutcome v = ctx.verify(c, "write", kChunk, {0, 1});
  ctx.expect(v.ok, "stream 1's message placed, nothing of stream 0's", "Peer.Verify: " + v.detail);
}

// ---------------------------------------------------------------- integrity

void crc_bad_trailer(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  // Two WRITEs with poison payloads, each intact but for its CRC: one with the
  // trailer's last bit flipped, one with a payload bit flipped after sealing.
  Outgoing o = ctx.write_chunk(c, 0, 0, kChunk, 0, 0, 0, 0);
  o.payload = CaseContext::poison(kChunk);
  Built trailer = ctx.build(o);
  trailer.bytes.back() ^= 0x01;
  ctx.send_bytes(trailer, "CRC32C trailer's last bit flipped");
  o.seq = 1;
  Built payload = ctx.build(o);
  payload.bytes[40 + sizeof(mw::WriteExt) + 100] ^= 0x10;
  ctx.send_bytes(payload, "a payload bit flipped after the CRC was computed");
  const uint32_t ts = ctx.send(ctx.probe(c, 0, 2, 0));
  const AckSeen fence = ctx.await_ack(c, 0, ts, "the fence after the corrupted frames");
  ctx.expect_no_nak("for corrupted frames (dropped silently, §7, §10 packet step 7)");
  for (const AckSeen& s : ctx.blocks(c, 0))
    ctx.expect(s.block.echo_ts.get() != trailer.tx_ts && s.block.echo_ts.get() != payload.tx_ts,
               "no ACK echoing a corrupted frame", describe_packet(*s.ack->bytes));
  ctx.expect_block(fence, 0, {1}, "seqs 0 and 1 (corrupted) not recorded, seq 2 recorded");
  expect_untouched(ctx, c, 1, "a frame with a bad CRC places nothing");
}

// ---------------------------------------------------------------- atomics

// The DUT's ATOMIC_RESPs for (stream, msg_seq), in arrival order.
std::vector<const Answer*> atomic_responses(CaseContext& ctx, uint16_t stream, uint32_t msg_seq) {
  std::vector<const Answer*> out;
  for (const auto& a : ctx.answers())
    if (a->error == mw::DecodeError::kNone && a->view.opcode == mw::Opcode::kAtomicResp &&
        a->view.common.stream_id.get() == stream && a->view.common.msg_seq.get() == msg_seq)
      out.push_back(a.get());
  return out;
}

const Answer& await_atomic_response(CaseContext& ctx, uint16_t stream, uint32_t msg_seq, const std::string& what) {
  if (!ctx.collect_until([&] { return !atomic_responses(ctx, stream, msg_seq).empty(); }))
    throw CaseFailure(format("expected an ATOMIC_RESP for stream %u message %u (%s); seen none", stream, msg_seq,
                             what.c_str()));
  return *atomic_responses(ctx, stream, msg_seq).front();
}

void atomic_replay_once(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  ctx.acknowledge_dut_data();
  // FETCH_ADD message 0 (+1 on a counter at 0), then the same request again:
  // the same packet (a fabric duplicate) and a RETX copy under a fresh seq
  // (a spurious retransmission, or the whole-message resend of §11.6).
  const Built request = ctx.build(ctx.fetch_add(c, 0, 0, 1, 0, 0, 0));
  ctx.send_bytes(request, "FETCH_ADD message 0");
  const Answer& first = await_atomic_response(ctx, 0, 0, "the first FETCH_ADD");
  ctx.expect(first.view.ext.atomic_resp.original.get() == 0, "message 0's original value 0 (the counter starts at 0)",
             describe_packet(*first.bytes));
  ctx.send_bytes(request, "the same packet again: a fabric duplicate");
  Outgoing replay = ctx.fetch_add(c, 0, 0, 1, 0, 1, 0);
  replay.flags |= mw::kFlagRetx;
  ctx.send(replay);
  // Message 1 (+1): it sees the counter as message 0 alone left it.
  ctx.send(ctx.fetch_add(c, 0, 1, 1, 0, 2, 0));
  const Answer& second = await_atomic_response(ctx, 0, 1, "FETCH_ADD message 1 after the replays");
  ctx.expect(second.view.ext.atomic_resp.original.get() == 1,
             "message 1's original value 1 (message 0 executed exactly once, §11.12)", describe_packet(*second.bytes));
  ctx.expect_no_nak("for an atomic and its replays");
  for (const Answer* a : atomic_responses(ctx, 0, 0))
    ctx.expect(a->view.ext.atomic_resp.original.get() == 0,
               "every ATOMIC_RESP for message 0 to carry the value stored at its one execution (a lost response is "
               "resent, never re-executed, §11.12)",
               describe_packet(*a->bytes));
  const VerifyOutcome v = ctx.verify(c, "fetch_add", 8, {2});
  ctx.expect(v.ok, "the counter at 2 after two FETCH_ADDs", "Peer.Verify: " + v.detail);
}

void atomic_compare_swap(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  ctx.acknowledge_dut_data();
  // On the stream's counter (0): swap 0 -> 5 (compare matches), then 0 -> 7
  // (compare fails: nothing written), then FETCH_ADD +1 reads what is there.
  auto cas = [&](uint32_t msg, uint64_t compare, uint64_t swap, uint32_t seq) {
    Outgoing o = ctx.fetch_add(c, 0, msg, swap, 0, seq, 0);
    o.op = mw::Opcode::kCmpSwap;
    o.compare = compare;
    return o;
  };
  ctx.send(cas(0, 0, 5, 0));
  const Answer& first = await_atomic_response(ctx, 0, 0, "CMP_SWAP compare 0 swap 5");
  ctx.expect(first.view.ext.atomic_resp.original.get() == 0, "original 0", describe_packet(*first.bytes));
  ctx.send(cas(1, 0, 7, 1));
  const Answer& second = await_atomic_response(ctx, 0, 1, "CMP_SWAP compare 0 swap 7");
  ctx.expect(second.view.ext.atomic_resp.original.get() == 5, "original 5 (the first swap wrote 5, §5.4)",
             describe_packet(*second.bytes));
  ctx.send(ctx.fetch_add(c, 0, 2, 1, 0, 2, 0));
  const Answer& third = await_atomic_response(ctx, 0, 2, "FETCH_ADD +1 after the failed compare");
  ctx.expect(third.view.ext.atomic_resp.original.get() == 5,
             "original 5 (CMP_SWAP writes only when the value equals compare, §5.4)", describe_packet(*third.bytes));
  ctx.expect_no_nak("for atomics on an aligned counter with the remote-atomic right");
}

// ---------------------------------------------------------------- READ

void read_back_later_chunks(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  ctx.acknowledge_dut_data();
  // A 3-chunk WRITE whose later chunks carry bytes unlike the region's fill
  // (Peer.Verify only tells a slot's first word apart), sent last chunk first.
  std::vector<uint8_t> written(3 * kChunk);
  uint64_t addr = 0;
  uint32_t ts = 0;
  for (int chunk = 2; chunk >= 0; --chunk) {
    Outgoing o = ctx.write_chunk(c, 0, 0, 3 * kChunk, static_cast<uint32_t>(chunk), 0, static_cast<uint32_t>(2 - chunk), 0);
    if (chunk > 0)
      for (size_t i = 0; i < o.payload.size(); ++i) o.payload[i] = static_cast<uint8_t>(0x3C ^ (chunk * 7 + i));
    std::copy(o.payload.begin(), o.payload.end(), written.begin() + chunk * kChunk);
    if (chunk == 0) addr = o.remote_addr;
    ts = ctx.send(o);
  }
  const AckSeen a = ctx.await_ack(c, 0, ts, "the WRITE's first chunk, sent last");
  ctx.expect(a.ack->view.common.msg_seq.get() == 1, "watermark 1 (the WRITE complete)",
             format("watermark %u", a.ack->view.common.msg_seq.get()));
  // READ it back as message 1 of the same stream (executed after message 0).
  ctx.send(ctx.read_request(c, 0, 1, addr, 3 * kChunk, 0, 3, 0));
  std::vector<uint8_t> got(3 * kChunk);
  std::vector<bool> have(3, false);
  auto responses = [&] {
    for (const auto& r : ctx.answers()) {
      if (r->error != mw::DecodeError::kNone || r->view.opcode != mw::Opcode::kReadResp) continue;
      const auto& h = r->view.common;
      ctx.expect(h.msg_seq.get() == 1 && h.msg_len.get() == 3 * kChunk && h.msg_offset.get() % kChunk == 0 &&
                     h.msg_offset.get() + r->view.payload.size() <= 3 * kChunk,
                 "READ_RESP for message 1 with msg_len 768 and chunk-aligned offsets (§5.3, §11.12)",
                 describe_packet(*r->bytes));
      std::copy(r->view.payload.begin(), r->view.payload.end(), got.begin() + h.msg_offset.get());
      have[h.msg_offset.get() / kChunk] = true;
    }
    return have[0] && have[1] && have[2];
  };
  if (!ctx.collect_until(responses))
    throw CaseFailure("expected READ_RESP packets covering all 768 bytes of message 1 (§11.12); seen " +
                      std::string(have[0] ? "" : "no offset 0 ") + (have[1] ? "" : "no offset 256 ") +
                      (have[2] ? "" : "no offset 512"));
  ctx.expect_no_nak("for a WRITE and a READ of its bytes");
  for (size_t i = 0; i < got.size(); ++i)
    ctx.expect(got[i] == written[i], "the READ to return the bytes written, every chunk placed where its packet said (§11.1)",
               format("byte %zu (chunk %zu) reads 0x%02x, written 0x%02x", i, i / kChunk, got[i], written[i]));
}

// ---------------------------------------------------------------- ACK contents

void ack_rate_hint(CaseContext& ctx) {
  const double capacity = ctx.dut().inbound_capacity_bps();
  ctx.note_seen(format("DUT's configured inbound capacity: %.0f bit/s", capacity));
  const DutConnection& c = ctx.open();
  const uint32_t ts = ctx.send(ctx.write_chunk(c, 0, 0, kChunk, 0, 0, 0, 0));
  const AckSeen a = ctx.await_ack(c, 0, ts, "a WRITE, this connection the DUT's only active sender");
  // §11.10: capacity / active senders, in kbit/s; 0 = no capacity configured.
  const double want = capacity <= 0 ? 0 : std::min(capacity / 1000.0, 4.0e9);
  const uint32_t got = a.ack->view.ext.ack.rate_hint_kbps.get();
  ctx.expect(got == static_cast<uint32_t>(want),
             format("rate_hint_kbps %.0f (inbound capacity %.0f bit/s shared by 1 active sender, §6.1, §11.10)", want,
                    capacity),
             format("rate_hint_kbps %u", got));
}

void ack_ecn_echo(CaseContext& ctx) {
  const DutConnection& c = ctx.open();
  const mw::Ecn marks[5] = {mw::Ecn::kCe, mw::Ecn::kEct0, mw::Ecn::kCe, mw::Ecn::kCe, mw::Ecn::kEct0};
  uint32_t ts = 0;
  for (uint32_t seq = 0; seq < 5; ++seq) ts = ctx.send(ctx.probe(c, 0, seq, 0), marks[seq]);
  ctx.await_ack(c, 0, ts, "the last of 5 PROBEs");
  // The count restarts after every block, so the blocks' counts add up to the
  // CE-marked packets whatever the DUT's ACK pacing.
  uint64_t total = 0;
  for (const AckSeen& s : ctx.blocks(c, 0)) total += s.block.ecn_count.get();
  ctx.expect(total == 3, "ecn_count summing to 3 over path 0's blocks (3 of 5 packets CE-marked, §1.4, §6.2)",
             format("a sum of %" PRIu64, total));
}


// ---------------------------------------------------------------- the DUT as the sender

// The DUT writes 4 two-chunk messages toward the suite over one path; the
// suite loses its path_seq 2 (message 1's first chunk) and SACKs the rest.
void retransmit_exact_hole(CaseContext& ctx) {
  SenderJob job;
  job.paths = 1;
  job.queue_depth = 4;
  job.mtu_payload = kChunk;
  job.max_message_bytes = 2 * kChunk;
  job.message_bytes = 2 * kChunk;
  job.messages = 4;
  // A DUT's timers cannot repair the hole first: its RTO is at least 50 ms.
  job.min_rto_ns = 50'000'000;
  bool lost_one = false;
  const SenderConnection& s = ctx.start_sender(job, [&](const Answer& a) {
    if (lost_one || a.view.opcode != mw::Opcode::kWrite || a.view.common.path_id != 0 ||
        a.view.common.path_seq.get() != 2)
      return false;
    return lost_one = true;
  });
  const uint32_t chunks = job.message_bytes / kChunk;
  if (!ctx.collect_until([&] { return ctx.sender_complete(s); }))
    throw CaseFailure(format("expected every chunk of the DUT's %" PRIu64 " messages, the lost one (path 0 seq 2) "
                             "retransmitted once a later seq was SACKed (§11.4), within %lld ms; seen the suite's "
                             "watermark stop at %u%s",
                             job.messages, static_cast<long long>(ctx.options().answer_timeout.count()),
                             ctx.sender_watermark(s), lost_one ? "" : " (the DUT never sent path 0 seq 2)"));
  const SenderOutcome o = ctx.finish_sender(s);
  ctx.expect(o.ended, "the DUT's job to end once the suite's watermark passed every message (§6.3, §11.11)",
             "job still " + o.state);
  // Fence: the job's connection is gone, so a PROBE to it gets an
  // UNKNOWN_CONNECTION NAK (§8), sent after anything the job sent.
  Outgoing fence;
  fence.op = mw::Opcode::kProbe;
  fence.flags = mw::kFlagAckReq;
  fence.dst_conn = s.dut_id;
  fence.src_conn = s.tool_id;
  ctx.send(fence);
  ctx.await_nak(s.tool_id, 0, 0, "a PROBE to the ended job's connection: everything the DUT sent is in");

  // Every transmission of every chunk, by (message, offset).
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const Answer*>> sent;
  const Answer* lost = nullptr;
  for (const Answer* a : ctx.sender_packets(s)) {
    if (a->view.opcode != mw::Opcode::kWrite) continue;  // PROBEs are not retransmissions (§11.5)
    sent[{a->view.common.msg_seq.get(), a->view.common.msg_offset.get()}].push_back(a);
    if (a->withheld) lost = a;
  }
  ctx.expect(lost != nullptr, "the DUT to send path 0 seq 2 (4 messages of 2 chunks on one path)", "no such packet");
  const auto hole = std::make_pair(lost->view.common.msg_seq.get(), lost->view.common.msg_offset.get());
  for (uint32_t m = 0; m < job.messages; ++m)
    for (uint32_t k = 0; k < chunks; ++k) {
      const auto key = std::make_pair(m, k * kChunk);
      const auto it = sent.find(key);
      const size_t n = it == sent.end() ? 0 : it->second.size();
      if (key == hole) {
        ctx.expect(n == 2, format("message %u offset %u (lost on path 0 seq 2) sent exactly twice: once, and once "
                                  "retransmitted (§11.4)", m, k * kChunk),
                   format("%zu transmissions", n));
        const Answer& first = *it->second[0];
        const Answer& again = *it->second[1];
        ctx.expect((again.view.common.flags & mw::kFlagRetx) != 0 && again.view.common.path_seq.get() != 2 &&
                       std::equal(first.view.payload.begin(), first.view.payload.end(), again.view.payload.begin(),
                                  again.view.payload.end()),
                   "the retransmission with RETX, a fresh path_seq and the original's payload (§4.1, §11.3, §11.4)",
                   describe_packet(*again.bytes));
      } else {
        ctx.expect(n == 1, format("message %u offset %u (received and SACKed) sent exactly once: nothing the suite "
                                  "acknowledged is sent again (§6.2, §11.4)", m, k * kChunk),
                   format("%zu transmissions", n));
      }
    }
  ctx.expect(o.state == "DONE" && o.completion_errors == 0,
             "the DUT's job DONE without completion errors", o.state + (o.error.empty() ? "" : ": " + o.error));
  ctx.expect(o.rtos == 0,
             "no retransmission timeout at the DUT: the hole repaired on the SACK, at once (§11.4, §11.6)",
             format("%" PRIu64 " RTOs", o.rtos));
}

// The DUT reads 2 two-chunk messages from the suite; the suite answers message
// 1 in full before message 0. The requester must still complete them in post
// order (§11.11): the DUT's traffic job checks that every completion comes in
// the order it posted, and reports a completion out of post order as its
// first error.
void completion_requester_order(CaseContext& ctx) {
  SenderJob job;
  job.operation = "read";
  job.paths = 1;
  job.queue_depth = 2;
  job.mtu_payload = kChunk;
  job.max_message_bytes = 2 * kChunk;
  job.message_bytes = 2 * kChunk;
  job.messages = 2;
  job.min_rto_ns = 50'000'000;  // no timer of the DUT fires while the suite answers
  const SenderConnection& s = ctx.start_sender(job, nullptr);
  const Answer* request[2] = {nullptr, nullptr};
  const bool both = ctx.collect_until([&] {
    for (const Answer* a : ctx.sender_packets(s))
      if (a->view.opcode == mw::Opcode::kReadReq && a->view.common.msg_seq.get() < 2)
        request[a->view.common.msg_seq.get()] = a;
    return request[0] && request[1];
  });
  if (!both)
    throw CaseFailure(format("expected the DUT's READ_REQs for messages 0 and 1 (queue depth 2) within %lld ms; "
                             "seen %s",
                             static_cast<long long>(ctx.options().answer_timeout.count()),
                             request[0] ? "message 0 only" : request[1] ? "message 1 only" : "neither"));
  for (const Answer* r : request)
    ctx.expect(r->view.ext.read_req.length.get() == s.job.message_bytes &&
                   r->view.ext.read_req.rkey.get() == s.job.rkey,
               format("READ_REQs of %u bytes under the suite's rkey 0x%08x (§5.3)", s.job.message_bytes, s.job.rkey),
               describe_packet(*r->bytes));
  ctx.send_read_response(s, *request[1]);
  ctx.send_read_response(s, *request[0]);
  const SenderOutcome o = ctx.finish_sender(s);
  ctx.expect(o.ended && o.state == "DONE" && o.completion_errors == 0 && o.error.empty(),
             "the DUT's job DONE with no error: READ 0 completed before READ 1 although READ 1's response arrived "
             "first (completions in post order, §11.11, §11.12)",
             (o.ended ? o.state : "still " + o.state) + (o.error.empty() ? "" : ": " + o.error));
}

// ---------------------------------------------------------------- RoCEv2

// The DUT's RoCEv2 answers from index `from` on, one per line (for failures).
std::string rocev2_answers_text(const CaseContext& ctx, size_t from) {
  std::string s;
  for (size_t i = from; i < ctx.rocev2_answers().size(); ++i)
    s += (s.empty() ? "" : "; ") + describe_rocev2(*ctx.rocev2_answers()[i]->frame);
  return s.empty() ? "nothing" : s;
}

// Reads RoCEv2 answers until one at index >= from is an ACK (not a NAK) of
// `psn`: the fence. The responder answers in arrival order, so every answer to
// what was sent before the packet this ACK answers is then in hand. Returns
// its index; fails the case when none comes.
size_t await_rocev2_ack(CaseContext& ctx, size_t from, uint32_t psn, const std::string& what) {
  size_t found = 0;
  const auto& answers = ctx.rocev2_answers();
  const bool ok = ctx.collect_rocev2_until([&] {
    for (size_t i = from; i < answers.size(); ++i)
      if (answers[i]->is_ack() && answers[i]->view.psn == psn) {
        found = i;
        return true;
      }
    return false;
  });
  if (!ok)
    throw CaseFailure(format("expected %s within %lld ms; seen %s", what.c_str(),
                             static_cast<long long>(ctx.options().answer_timeout.count()),
                             rocev2_answers_text(ctx, from).c_str()));
  return found;
}

// The answers in [from, fence] are exactly one NAK PSN sequence error for
// `epsn`, then the fence ACK.
void expect_one_sequence_nak(CaseContext& ctx, size_t from, size_t fence, uint32_t epsn, const std::string& when) {
  const auto& answers = ctx.rocev2_answers();
  const bool ok = fence == from + 1 && answers[from]->is_nak() &&
                  answers[from]->syndrome() == mw::rocev2::kSyndromeNakPsnSeqError && answers[from]->view.psn == epsn;
  ctx.expect(ok,
             format("%s: exactly one NAK, PSN sequence error (0x%02x) carrying the expected PSN %u, then the fence's "
                    "ACK (§12: one NAK on the first out-of-sequence PSN, then every new request is dropped until the "
                    "expected PSN arrives; duplicates are still answered)",
                    when.c_str(), mw::rocev2::kSyndromeNakPsnSeqError, epsn),
             rocev2_answers_text(ctx, from));
}

// The RoCEv2 baseline's responder (§12, go-back-N as the InfiniBand
// Architecture Specification Vol. 1 has it for RC): PSN n+2 with n+1 missing
// draws one NAK carrying n+1; further new requests are dropped without an
// answer until n+1 arrives, duplicates are still acknowledged; nothing out of
// sequence is placed. The suite's duplicate of the last in-sequence PSN is the
// fence: its ACK (PSN = ePSN - 1, which is the duplicate's own PSN here) comes
// after every answer to what was sent before it.
void rocev2_nak_first_oos_psn(CaseContext& ctx) {
  ConnectionRequest r;
  r.rocev2 = true;
  r.paths = 1;
  const DutConnection& c = ctx.open(r);
  const std::vector<uint8_t> poison = CaseContext::poison(kChunk);
  ctx.send_rocev2(ctx.rocev2_write(c, 0, 0, true), "message 0 in sequence");
  const size_t first = await_rocev2_ack(ctx, 0, 0, "an ACK of PSN 0, the in-sequence WRITE with AckReq (§12)");
  ctx.expect(first == 0, "only the ACK of PSN 0 for an in-sequence WRITE (§12)", rocev2_answers_text(ctx, 0));

  // PSN 1 lost: PSN 2 is the first out of sequence, PSN 3 the next (both poison).
  ctx.send_rocev2(ctx.rocev2_write(c, 2, 2, true, &poison), "PSN 1 skipped: the first out-of-sequence PSN, poison");
  ctx.send_rocev2(ctx.rocev2_write(c, 3, 3, true, &poison), "out of sequence again before the hole is filled, poison");
  ctx.send_rocev2(ctx.rocev2_write(c, 0, 0, true), "PSN 0 again: a duplicate, the fence");
  const size_t fence = await_rocev2_ack(ctx, first + 1, 0, "an ACK of PSN 0 answering the duplicate (the fence)");
  expect_one_sequence_nak(ctx, first + 1, fence, 1, "for PSNs 2 and 3 with PSN 1 missing");
  VerifyOutcome v = ctx.verify(c, "write", kChunk, {1});
  ctx.expect(v.ok, "message 0 placed, and nothing of the out-of-sequence PSNs 2 and 3 (§12: dropped)",
             "Peer.Verify: " + v.detail);

  // The requester goes back to PSN 1: PSNs 1-3 with messages 1-3's bytes.
  ctx.send_rocev2(ctx.rocev2_write(c, 1, 1, false), "the hole filled: go back to PSN 1");
  ctx.send_rocev2(ctx.rocev2_write(c, 2, 2, false));
  ctx.send_rocev2(ctx.rocev2_write(c, 3, 3, true));
  const size_t filled = await_rocev2_ack(ctx, fence + 1, 3, "an ACK of PSN 3 once PSNs 1-3 arrived in sequence");
  for (size_t i = fence + 1; i <= filled; ++i)
    ctx.expect(ctx.rocev2_answers()[i]->is_ack(), "no NAK once the expected PSN arrived and the rest in sequence",
               rocev2_answers_text(ctx, fence + 1));

  // A new gap draws its own NAK: PSN 5 with PSN 4 missing; PSN 3 again is the fence.
  ctx.send_rocev2(ctx.rocev2_write(c, 5, 5, true, &poison), "PSN 4 skipped: a new gap, poison");
  ctx.send_rocev2(ctx.rocev2_write(c, 3, 3, true), "PSN 3 again: a duplicate, the fence");
  const size_t again = await_rocev2_ack(ctx, filled + 1, 3, "an ACK of PSN 3 answering the duplicate (the fence)");
  expect_one_sequence_nak(ctx, filled + 1, again, 4, "for PSN 5 with PSN 4 missing (a new gap after the first was filled)");
  v = ctx.verify(c, "write", kChunk, {4});
  ctx.expect(v.ok, "messages 0-3 placed, and nothing of the out-of-sequence PSN 5", "Peer.Verify: " + v.detail);
}

}  // namespace

const std::vector<CaseInfo>& catalogue() {
  static const std::vector<CaseInfo> cases = {
      {"placement.in-order", "§5.1, §6.3, §11.1", "WRITEs in order are placed and acknowledged",
       "4 one-packet WRITEs (256 B, the Peer.Verify pattern), path 0 seqs 0-3",
       "ACK cum_seq 4, empty SACK, watermark 4; no NAK; Peer.Verify finds messages 0-3 in their slots",
       placement_in_order},
      {"placement.out-of-order", "§6.3, §11.1, §11.7", "packets of several messages placed in any order",
       "4 two-chunk WRITEs, chunks and messages scrambled, path seqs swapped in pairs; message 0's first chunk last",
       "watermark 0 while message 0 lacks a chunk, then 4; cum_seq 8, empty SACK; no NAK; Peer.Verify ok",
       placement_out_of_order},
      {"placement.duplicate", "§10, §11.7", "duplicates acknowledged, neither placed nor completed again",
       "WRITE_IMM message 0, the same packet again, a RETX copy with poison payload under a fresh seq; message 1 of 2 "
       "chunks with its first chunk repeated as poison",
       "cum_seq 5, empty SACK, watermark 2; no NAK; exactly 2 receive completions and no poison in memory",
       placement_duplicate},
      {"completion.stream-order", "§11.7, §11.11", "receive completions in msg_seq order within each stream",
       "WRITE_IMMs (immediate = message number) on 2 streams, each stream's messages last first, streams interleaved",
       "stream 0's watermark 3; 5 receive completions, the n-th of each stream carrying immediate n",
       completion_stream_order},
      {"sack.gaps", "§6.2, §11.3", "SACK bits after crafted gaps, per path",
       "PROBEs on path 0 seqs 0, 2, 3, 5, 9, then 1, then 4; path 1 seq 0",
       "cum 1 bits {0,1,3,7}; cum 4 bits {0,4}; cum 6 bits {2}; path 1: cum 1, empty", sack_gaps},
      {"sack.window-edge", "§3, §6.2, §10", "the 256-packet window's edge",
       "PROBEs seq 255 floor 0 (last in window), 256 floor 0 (beyond), 1, 0, then 257 floor 2",
       "cum 0 bit 254; 256 dropped (no ACK, bit 255 clear); cum 2 bit 252; then bits {252, 254}", sack_window_edge},
      {"sack.floor-slide", "§6.2, §11.3", "the receiver slides its window to the sender's path_floor",
       "PROBEs seqs 0, 2; seq 5 floor 2; seq 6 floor 6", "cum 1 bit 0; cum 3 bit 1; cum 7 empty", sack_floor_slide},
      {"sack.sequence-wrap", "§3, §6.2", "SACK across the 32-bit sequence wrap",
       "PROBEs moving the floor to 0x7ffffff8 then 0xfffffff0; seqs 0xffffffff and 1; then 0xfffffff1-0xfffffffe, 0",
       "cum 0xfffffff1 bits {13, 15}; then cum 2, empty", sack_sequence_wrap},
      {"nak.bad-key", "§5.1, §8", "BAD_KEY for an rkey that names no region",
       "a one-packet WRITE (poison) with the connection's rkey xor 0x5a5a0000",
       "NAK BAD_KEY naming stream 0 message 0 offset 0; path-level ACK; nothing placed", nak_bad_key},
      {"nak.out-of-bounds", "§5.1, §8", "OUT_OF_BOUNDS for an access past the region's end",
       "a 256 B WRITE (poison) starting 128 B before the target region's end",
       "NAK OUT_OF_BOUNDS; path-level ACK; nothing placed", nak_out_of_bounds},
      {"nak.access-violation", "§5.1, §8", "ACCESS_VIOLATION for a region without the remote-write right",
       "Memory.Register a 4 KiB region with remote_read only; a WRITE into it under its key",
       "NAK ACCESS_VIOLATION; path-level ACK", nak_access_violation},
      {"nak.unknown-connection", "§8, §10", "UNKNOWN_CONNECTION for a dst_conn_id the DUT does not have",
       "a valid WRITE (poison) to the DUT's connection id xor 0x800001; then a PROBE on the real connection",
       "NAK UNKNOWN_CONNECTION with src_conn_id 0 naming the message; no ACK for it; the real connection unaffected",
       nak_unknown_connection},
      {"nak.stream-error", "§8, §11.11", "a fatal NAK stops only its stream",
       "stream 0 message 0 under a bad key, stream 0 message 1 (valid fields, poison), stream 1 message 0",
       "BAD_KEY, then INVALID_REQUEST for stream 0 message 1; stream 1 placed with watermark 1", nak_stream_error},
      {"crc.bad-trailer", "§7, §10", "a frame with a wrong CRC32C is dropped silently",
       "a WRITE (poison) with its trailer's last bit flipped, another with a payload bit flipped; a PROBE fence",
       "no NAK, no ACK for either; fence ACK cum 0 bit 1 (neither seq recorded); nothing placed", crc_bad_trailer},
      {"atomic.replay-once", "§5.4, §5.5, §11.12", "an atomic executes exactly once under replay",
       "FETCH_ADD +1 (message 0), the same packet again, a RETX copy under a fresh seq, then FETCH_ADD +1 (message 1); "
       "the suite ACKs the DUT's responses",
       "ATOMIC_RESP original 0 for message 0 (every copy), 1 for message 1; no NAK; Peer.Verify: the counter at 2",
       atomic_replay_once},
      {"atomic.compare-swap", "§5.4, §5.5", "CMP_SWAP writes only when the target equals compare",
       "CMP_SWAP compare 0 swap 5, CMP_SWAP compare 0 swap 7, FETCH_ADD +1, on a counter at 0",
       "ATOMIC_RESP originals 0, 5 and 5; no NAK", atomic_compare_swap},
      {"read.after-write", "§5.3, §11.1, §11.12", "a READ returns what a WRITE placed, later chunks included",
       "a 3-chunk WRITE (chunks 1-2 unlike the region's fill) sent last chunk first, then a READ_REQ of its 768 bytes "
       "on the same stream; the suite ACKs the DUT's responses",
       "watermark 1; READ_RESP chunks for message 1 covering 768 bytes, equal to the bytes written; no NAK",
       read_back_later_chunks},
      {"ack.rate-hint", "§6.1, §11.10", "the receiver's fair-share rate hint in ACKs",
       "a WRITE on a connection that is the DUT's only active sender",
       "rate_hint_kbps = configured inbound capacity / 1000 (0 when none is configured)", ack_rate_hint},
      {"ack.ecn-echo", "§1.4, §6.2", "CE marks echoed per path",
       "5 PROBEs on path 0, 3 of them with IP ECN CE, the others ECT(0)",
       "ecn_count summing to 3 over the path's ACK blocks, ECE exactly where the count is > 0", ack_ecn_echo},
      {"retransmit.exact-hole", "§6.2, §11.3, §11.4", "the DUT as sender retransmits exactly the hole, at once",
       "the DUT's traffic job toward the suite: 4 two-chunk WRITEs on one path (min RTO 50 ms); the suite loses path 0 "
       "seq 2 and acknowledges everything else at once (cum_seq, SACK, watermark); a PROBE to the ended connection as "
       "the fence",
       "the lost chunk sent again once, with RETX, a fresh seq and its payload; every other chunk sent once; the job "
       "DONE with no RTO",
       retransmit_exact_hole},
      {"completion.requester-order", "§11.11, §11.12", "the DUT as requester completes READs in post order",
       "the DUT's traffic job toward the suite: 2 READs of 2 chunks (queue depth 2, min RTO 50 ms); the suite answers "
       "message 1 in full, then message 0",
       "the job DONE with no completion error and no first error (its driver names a completion out of post order)",
       completion_requester_order},
      {"rocev2.nak-first-oos-psn", "§12", "the RoCEv2 responder NAKs the first out-of-sequence PSN once (go-back-N)",
       "a RoCEv2 RC QP: WRITE_ONLY PSN 0; PSNs 2 and 3 (poison; PSN 1 skipped); PSN 0 again (a duplicate, the fence); "
       "PSNs 1-3 (the hole filled); PSN 5 (poison; PSN 4 skipped); PSN 3 again (the fence)",
       "ACK PSN 0; then exactly one NAK PSN sequence error (0x60) with PSN 1 and the duplicate's ACK PSN 0, nothing for "
       "PSN 3; no NAK for PSNs 1-3, ACK PSN 3; one NAK with PSN 4, the duplicate's ACK PSN 3; Peer.Verify: messages "
       "0-3 placed, no poison",
       rocev2_nak_first_oos_psn},
  };
  return cases;
}

}  // namespace metaroce::conformance
