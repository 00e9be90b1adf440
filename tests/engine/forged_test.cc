// Forged and malformed packets injected straight into B with Endpoint::on_frame:
// every one is refused, counted in the right counter, answered with the right
// NAK code (or silently dropped where a NAK would be wrong), and B's memory is
// unchanged byte for byte. A valid packet on another stream still lands
// afterwards (the connection stays healthy).
#include <cstddef>
#include <optional>

#include "harness.h"

namespace engine_test {
namespace {

using mw::NakCode;
using mw::Opcode;

constexpr Nanos kNow = 10 * kUs;
constexpr size_t kRegion = 8192;

struct ForgeFixture {
  Harness h{uniform_planes(1)};
  ConnPair conn = h.connect_metaroce(1, 2);
  // B's regions, each filled with a pattern that must survive.
  Buffer& rw = h.alloc(kB, kRegion,
                       mt::kAccessLocalWrite | mt::kAccessRemoteWrite | mt::kAccessRemoteRead | mt::kAccessRemoteAtomic,
                       "B.rw");
  Buffer& local_only = h.alloc(kB, kRegion, mt::kAccessLocalWrite, "B.local_only");
  Buffer& write_only = h.alloc(kB, kRegion, mt::kAccessLocalWrite | mt::kAccessRemoteWrite, "B.write_only");
  Buffer& probe = h.alloc(kB, kRegion, mt::kAccessLocalWrite | mt::kAccessRemoteWrite, "B.probe");
  uint32_t path_seq = 0;

  ForgeFixture() {
    rw.set_pattern(0, kRegion, 1);
    local_only.set_pattern(0, kRegion, 2);
    write_only.set_pattern(0, kRegion, 3);
    probe.set_pattern(0, kRegion, 4);
  }

  mw::UdpFlow flow_a_to_b() const {
    mw::UdpFlow f;
    f.src_mac = kMacA;
    f.dst_mac = kMacB;
    f.src_ip = kIpA;
    f.dst_ip = kIpB;
    f.src_port = 49152;
    f.dst_port = mw::kDefaultUdpPort;
    return f;
  }

  mw::CommonHeader header(Opcode op, uint16_t stream, uint32_t msg_seq, uint32_t msg_len, size_t payload_len) {
    mw::CommonHeader h{};
    h.version = mw::kVersion << 4;
    h.opcode = static_cast<uint8_t>(op);
    h.flags = mw::kFlagFirst | mw::kFlagLast | mw::kFlagAckReq;
    h.path_id = 0;
    h.dst_conn_id.set(conn.b);
    h.src_conn_id.set(conn.a);
    h.stream_id.set(stream);
    h.payload_len.set(static_cast<uint16_t>(payload_len));
    h.path_seq.set(path_seq++);
    h.path_floor.set(0);
    h.msg_seq.set(msg_seq);
    h.msg_offset.set(0);
    h.msg_len.set(msg_len);
    h.tx_ts.set(1);
    return h;
  }

  std::vector<uint8_t> write_frame(uint16_t stream, uint32_t msg_seq, uint64_t addr, uint32_t rkey,
                                   const std::vector<uint8_t>& payload) {
    mw::WriteExt e{};
    e.remote_addr.set(addr);
    e.rkey.set(rkey);
    const auto h = header(Opcode::kWrite, stream, msg_seq, static_cast<uint32_t>(payload.size()), payload.size());
    return forge_frame(flow_a_to_b(), h, &e, sizeof(e), payload);
  }
  std::vector<uint8_t> read_frame(uint16_t stream, uint32_t msg_seq, uint64_t addr, uint32_t rkey, uint32_t len) {
    mw::ReadReqExt e{};
    e.remote_addr.set(addr);
    e.rkey.set(rkey);
    e.length.set(len);
    return forge_frame(flow_a_to_b(), header(Opcode::kReadReq, stream, msg_seq, 0, 0), &e, sizeof(e));
  }
  std::vector<uint8_t> atomic_frame(Opcode op, uint16_t stream, uint32_t msg_seq, uint64_t addr, uint32_t rkey,
                                    uint64_t operand, uint64_t compare) {
    mw::AtomicExt e{};
    e.remote_addr.set(addr);
    e.rkey.set(rkey);
    e.operand.set(operand);
    e.compare.set(compare);
    return forge_frame(flow_a_to_b(), header(op, stream, msg_seq, 0, 0), &e, sizeof(e));
  }

  std::vector<std::unique_ptr<SentFrame>> inject(const std::vector<uint8_t>& frame) {
    h.ep(kB).on_frame(frame, kNow);
    return collect_tx(h.ep(kB), kNow);
  }

  // A valid WRITE on stream 1 lands in `probe` (the connection still works).
  void expect_healthy_after() {
    std::vector<uint8_t> data(300);
    fill_pattern(data.data(), data.size(), 99);
    auto tx = inject(write_frame(1, 0, probe.addr(100), probe.key, data));
    probe.expect_bytes(100, data.data(), data.size());
    for (const auto& f : tx)
      if (f->metaroce && f->err == mw::DecodeError::kNone) {
        EXPECT_NE(f->pkt.opcode, Opcode::kNak);
      }
    EXPECT_TRUE(h.verify_all());
  }
};

std::vector<const SentFrame*> of_opcode(const std::vector<std::unique_ptr<SentFrame>>& tx, Opcode op) {
  std::vector<const SentFrame*> r;
  for (const auto& f : tx) {
    EXPECT_TRUE(f->udp.has_value()) << "B emitted a frame that is not UDP/IPv4";
    EXPECT_TRUE(f->metaroce);
    EXPECT_EQ(f->err, mw::DecodeError::kNone) << "B emitted an undecodable packet";
    if (f->metaroce && f->err == mw::DecodeError::kNone && f->pkt.opcode == op) r.push_back(f.get());
  }
  return r;
}

// Exactly one NAK with `code` for (stream, msg_seq), addressed back to A's connection.
void expect_nak(ForgeFixture& fx, const std::vector<std::unique_ptr<SentFrame>>& tx, NakCode code, uint16_t stream,
                uint32_t msg_seq, uint32_t to_conn) {
  const auto naks = of_opcode(tx, Opcode::kNak);
  ASSERT_EQ(naks.size(), 1u) << "expected exactly one NAK";
  const SentFrame& n = *naks[0];
  EXPECT_EQ(n.pkt.ext.nak.code, static_cast<uint8_t>(code))
      << "NAK code " << mw::nak_code_name(static_cast<NakCode>(n.pkt.ext.nak.code)) << ", want "
      << mw::nak_code_name(code);
  EXPECT_EQ(n.pkt.ext.nak.stream_id.get(), stream);
  EXPECT_EQ(n.pkt.ext.nak.msg_seq.get(), msg_seq);
  EXPECT_EQ(n.pkt.common.dst_conn_id.get(), to_conn);
  EXPECT_EQ(n.udp->flow.dst_ip, kIpA);
  EXPECT_EQ(n.udp->flow.src_ip, kIpB);
  EXPECT_EQ(n.udp->flow.dst_port, mw::kDefaultUdpPort);
  (void)fx;
}

void expect_no_drops(const mt::EndpointCounters& c) {
  EXPECT_EQ(c.drop_not_ours, 0u);
  EXPECT_EQ(c.drop_decode, 0u);
  EXPECT_EQ(c.drop_checksum, 0u);
  EXPECT_EQ(c.drop_unknown_connection, 0u);
  EXPECT_EQ(c.drop_wrong_peer, 0u);
}

std::vector<uint8_t> payload(size_t n, uint64_t seed = 42) {
  std::vector<uint8_t> p(n);
  fill_pattern(p.data(), n, seed);
  return p;
}

// Control: the forging is right, so the refusals below are real refusals.
TEST(Forged, ValidWriteLandsControl) {
  ForgeFixture fx;
  const auto data = payload(1000);
  auto tx = fx.inject(fx.write_frame(0, 0, fx.rw.addr(500), fx.rw.key, data));
  fx.rw.expect_bytes(500, data.data(), data.size());
  EXPECT_TRUE(fx.h.verify_all());
  EXPECT_TRUE(of_opcode(tx, Opcode::kNak).empty());
  const auto acks = of_opcode(tx, Opcode::kAck);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0]->pkt.common.msg_seq.get(), 1u) << "watermark: message 0 complete";
  expect_no_drops(fx.h.ep(kB).counters());
  EXPECT_EQ(fx.h.ep(kB).stats(fx.conn.b).naks_sent, 0u);
}

TEST(Forged, WriteBadRkeyRefused) {
  ForgeFixture fx;
  const uint32_t stale = fx.rw.key + 0x10000;  // same slot, other generation
  auto tx = fx.inject(fx.write_frame(0, 0, fx.rw.addr(0), stale, payload(512)));
  expect_nak(fx, tx, NakCode::kBadKey, 0, 0, fx.conn.a);
  EXPECT_TRUE(fx.h.verify_all());
  expect_no_drops(fx.h.ep(kB).counters());
  EXPECT_EQ(fx.h.ep(kB).stats(fx.conn.b).naks_sent, 1u);
  auto tx2 = fx.inject(fx.write_frame(0, 1, fx.rw.addr(0), 0xDEAD0099u, payload(64)));
  EXPECT_FALSE(of_opcode(tx2, Opcode::kNak).empty()) << "the stream is in error: later messages are refused";
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

TEST(Forged, WritePartlyOutOfBoundsRefused) {
  ForgeFixture fx;
  // 100 bytes inside the region, 200 past its end.
  auto tx = fx.inject(fx.write_frame(0, 0, fx.rw.addr(kRegion - 100), fx.rw.key, payload(300)));
  expect_nak(fx, tx, NakCode::kOutOfBounds, 0, 0, fx.conn.a);
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

// Regression (bug found at 13ebe41 in metaroce_connection.cc, rx_data,
// kWrite/kWriteImm, fixed in the working tree): only each packet's own
// [remote_addr, remote_addr + payload_len) was checked, never the message's
// whole range. A 2-packet WRITE whose first packet lies inside the region and
// whose second crosses its end is refused (kOutOfBounds) only after the first
// packet's 4096 bytes were written: a WR that fails with a remote access error
// has modified the target region (IB validates the whole VA range first).
TEST(Forged, MultiPacketWritePartlyOutOfBoundsLeavesRegionUntouched) {
  ForgeFixture fx;
  constexpr uint32_t kLen = 8192;
  const uint64_t start = fx.rw.addr(kRegion - 6000);  // packet 0 inside, packet 1 crosses the end by 2192 B
  const auto data = payload(kLen);
  mw::WriteExt e{};
  e.rkey.set(fx.rw.key);
  auto h0 = fx.header(Opcode::kWrite, 0, 0, kLen, 4096);
  h0.flags = mw::kFlagFirst;
  e.remote_addr.set(start);
  auto tx0 = fx.inject(forge_frame(fx.flow_a_to_b(), h0, &e, sizeof(e), std::span(data).first(4096)));
  auto h1 = fx.header(Opcode::kWrite, 0, 0, kLen, 4096);
  h1.flags = mw::kFlagLast | mw::kFlagAckReq;
  h1.msg_offset.set(4096);
  e.remote_addr.set(start + 4096);
  auto tx1 = fx.inject(forge_frame(fx.flow_a_to_b(), h1, &e, sizeof(e), std::span(data).subspan(4096)));
  for (auto& f : tx1) tx0.push_back(std::move(f));
  // One NAK per refused packet: every one must say out of bounds for message 0.
  const auto naks = of_opcode(tx0, Opcode::kNak);
  ASSERT_FALSE(naks.empty());
  for (const SentFrame* n : naks) {
    EXPECT_EQ(n->pkt.ext.nak.code, static_cast<uint8_t>(NakCode::kOutOfBounds));
    EXPECT_EQ(n->pkt.ext.nak.stream_id.get(), 0u);
    EXPECT_EQ(n->pkt.ext.nak.msg_seq.get(), 0u);
    EXPECT_EQ(n->pkt.common.dst_conn_id.get(), fx.conn.a);
  }
  EXPECT_TRUE(fx.h.verify_all()) << "a WRITE refused as out of bounds modified its target region";
}

TEST(Forged, WriteBeforeRegionStartRefused) {
  ForgeFixture fx;
  auto tx = fx.inject(fx.write_frame(0, 0, fx.rw.addr(0) - 16, fx.rw.key, payload(64)));
  expect_nak(fx, tx, NakCode::kOutOfBounds, 0, 0, fx.conn.a);
  EXPECT_TRUE(fx.h.verify_all());  // the 16 front guard bytes included
  fx.expect_healthy_after();
}

TEST(Forged, WriteAddressOverflowNearUint64MaxRefused) {
  ForgeFixture fx;
  auto tx = fx.inject(fx.write_frame(0, 0, UINT64_MAX - 50, fx.rw.key, payload(200)));
  expect_nak(fx, tx, NakCode::kOutOfBounds, 0, 0, fx.conn.a);
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

TEST(Forged, WriteWhoseEndWrapsPastUint64MaxRefused) {
  ForgeFixture fx;
  // A full-MTU packet starting 100 bytes below 2^64: addr + len wraps to a small address.
  auto tx = fx.inject(fx.write_frame(0, 0, UINT64_MAX - 99, fx.rw.key, payload(4096)));
  expect_nak(fx, tx, NakCode::kOutOfBounds, 0, 0, fx.conn.a);
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

TEST(Forged, WriteWithoutRemoteWriteRightRefused) {
  ForgeFixture fx;
  auto tx = fx.inject(fx.write_frame(0, 0, fx.local_only.addr(0), fx.local_only.key, payload(256)));
  expect_nak(fx, tx, NakCode::kAccessViolation, 0, 0, fx.conn.a);
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

TEST(Forged, ReadReqWithoutRemoteReadRightRefused) {
  ForgeFixture fx;
  auto tx = fx.inject(fx.read_frame(0, 0, fx.write_only.addr(0), fx.write_only.key, 4096));
  expect_nak(fx, tx, NakCode::kAccessViolation, 0, 0, fx.conn.a);
  EXPECT_TRUE(of_opcode(tx, Opcode::kReadResp).empty()) << "no data may leave B";
  fx.h.run_for(1 * kMs);  // nor later
  EXPECT_TRUE(of_opcode(collect_tx(fx.h.ep(kB), fx.h.now()), Opcode::kReadResp).empty());
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

TEST(Forged, ReadReqOutOfBoundsAndOverflowRefused) {
  ForgeFixture fx;
  auto tx = fx.inject(fx.read_frame(0, 0, fx.rw.addr(kRegion - 10), fx.rw.key, 4096));
  expect_nak(fx, tx, NakCode::kOutOfBounds, 0, 0, fx.conn.a);
  EXPECT_TRUE(of_opcode(tx, Opcode::kReadResp).empty());
  ForgeFixture fy;
  auto ty = fy.inject(fy.read_frame(0, 0, UINT64_MAX - 100, fy.rw.key, 4096));
  expect_nak(fy, ty, NakCode::kOutOfBounds, 0, 0, fy.conn.a);
  EXPECT_TRUE(of_opcode(ty, Opcode::kReadResp).empty());
  EXPECT_TRUE(fx.h.verify_all());
  EXPECT_TRUE(fy.h.verify_all());
}

TEST(Forged, ReadReqLongerThanMaxMessageRefused) {
  ForgeFixture fx;
  auto tx = fx.inject(fx.read_frame(0, 0, fx.rw.addr(0), fx.rw.key, (1u << 20) + 1));
  expect_nak(fx, tx, NakCode::kInvalidRequest, 0, 0, fx.conn.a);
  EXPECT_TRUE(of_opcode(tx, Opcode::kReadResp).empty());
  EXPECT_TRUE(fx.h.verify_all());
}

TEST(Forged, AtomicMisalignedRefused) {
  ForgeFixture fx;
  auto tx = fx.inject(fx.atomic_frame(Opcode::kFetchAdd, 0, 0, fx.rw.addr(4), fx.rw.key, 1, 0));
  expect_nak(fx, tx, NakCode::kInvalidRequest, 0, 0, fx.conn.a);
  EXPECT_TRUE(of_opcode(tx, Opcode::kAtomicResp).empty());
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

TEST(Forged, CmpSwapMisalignedRefused) {
  ForgeFixture fx;
  auto tx = fx.inject(fx.atomic_frame(Opcode::kCmpSwap, 0, 0, fx.rw.addr(9), fx.rw.key, 5, fx.rw.u64(9)));
  expect_nak(fx, tx, NakCode::kInvalidRequest, 0, 0, fx.conn.a);
  EXPECT_TRUE(fx.h.verify_all());
}

TEST(Forged, AtomicWithoutAtomicRightRefused) {
  ForgeFixture fx;
  auto tx = fx.inject(fx.atomic_frame(Opcode::kFetchAdd, 0, 0, fx.write_only.addr(8), fx.write_only.key, 1, 0));
  expect_nak(fx, tx, NakCode::kAccessViolation, 0, 0, fx.conn.a);
  EXPECT_TRUE(of_opcode(tx, Opcode::kAtomicResp).empty());
  EXPECT_TRUE(fx.h.verify_all());
}

TEST(Forged, UnknownDstConnIdNakedByEndpoint) {
  ForgeFixture fx;
  auto frame = fx.write_frame(0, 0, fx.rw.addr(0), fx.rw.key, payload(128));
  // Rewrite dst_conn_id to an id B does not know and re-seal the CRC.
  mw::PacketView pv;
  ASSERT_EQ(mw::decode_packet(std::span<const uint8_t>(frame).subspan(mw::kUdpFrameHeaderBytes), pv),
            mw::DecodeError::kNone);
  mw::CommonHeader h = pv.common;
  h.dst_conn_id.set(0x7777);
  frame = forge_frame(fx.flow_a_to_b(), h, &pv.ext.write, sizeof(pv.ext.write), payload(128));
  auto tx = fx.inject(frame);
  const auto& c = fx.h.ep(kB).counters();
  EXPECT_EQ(c.drop_unknown_connection, 1u);
  EXPECT_EQ(c.naks_unknown_connection, 1u);
  expect_nak(fx, tx, NakCode::kUnknownConnection, 0, 0, fx.conn.a);
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

TEST(Forged, RightConnIdFromWrongSourceIpDropped) {
  ForgeFixture fx;
  mw::UdpFlow f = fx.flow_a_to_b();
  f.src_ip = 0x0A000063;  // 10.0.0.99
  mw::WriteExt e{};
  e.remote_addr.set(fx.rw.addr(0));
  e.rkey.set(fx.rw.key);
  const auto data = payload(256);
  auto tx = fx.inject(forge_frame(f, fx.header(Opcode::kWrite, 0, 0, 256, 256), &e, sizeof(e), data));
  EXPECT_EQ(fx.h.ep(kB).counters().drop_wrong_peer, 1u);
  EXPECT_TRUE(tx.empty()) << "nothing may be sent to a spoofing source";
  EXPECT_EQ(fx.h.ep(kB).stats(fx.conn.b).naks_sent, 0u);
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

TEST(Forged, CorruptedCrcDropped) {
  ForgeFixture fx;
  for (size_t where : {mw::kUdpFrameHeaderBytes + 3, mw::kUdpFrameHeaderBytes + 40 + 2, size_t{0}}) {
    auto frame = fx.write_frame(0, 0, fx.rw.addr(0), fx.rw.key, payload(256));
    frame[where ? where : frame.size() - 10] ^= 0x10;  // header, ext, payload
    auto tx = fx.inject(frame);
    EXPECT_TRUE(tx.empty());
  }
  EXPECT_EQ(fx.h.ep(kB).counters().drop_checksum, 3u);
  EXPECT_EQ(fx.h.ep(kB).stats(fx.conn.b).naks_sent, 0u);
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

// Regression (bug found at 13ebe41 in endpoint.cc, Endpoint::on_frame, fixed in
// the working tree): the connection lookup ran before the CRC was checked, so a bit flip inside dst_conn_id was counted as
// drop_unknown_connection instead of drop_checksum (drop causes must stay
// separate). No NAK is sent (reply_unknown_connection re-decodes), data is safe.
TEST(Forged, CorruptedConnIdCountedAsChecksumDrop) {
  ForgeFixture fx;
  auto frame = fx.write_frame(0, 0, fx.rw.addr(0), fx.rw.key, payload(256));
  frame[mw::kUdpFrameHeaderBytes + offsetof(mw::CommonHeader, dst_conn_id) + 3] ^= 0x40;  // 0x1001 -> 0x1041
  auto tx = fx.inject(frame);
  EXPECT_TRUE(tx.empty());
  EXPECT_TRUE(fx.h.verify_all());
  const auto& c = fx.h.ep(kB).counters();
  EXPECT_EQ(c.naks_unknown_connection, 0u);
  EXPECT_EQ(c.drop_checksum, 1u) << "a corrupted frame must be counted as a checksum drop";
  EXPECT_EQ(c.drop_unknown_connection, 0u) << "corruption misattributed to an unknown connection";
}

TEST(Forged, MalformedHeadersDropped) {
  ForgeFixture fx;
  uint64_t drops = 0;
  {  // wrong version
    mw::WriteExt e{};
    e.remote_addr.set(fx.rw.addr(0));
    e.rkey.set(fx.rw.key);
    auto h = fx.header(Opcode::kWrite, 0, 0, 64, 64);
    h.version = 2 << 4;
    EXPECT_TRUE(fx.inject(forge_frame(fx.flow_a_to_b(), h, &e, sizeof(e), payload(64))).empty());
    EXPECT_EQ(fx.h.ep(kB).counters().drop_bad_version, 1u);  // its own cause, not "decode"
  }
  {  // payload beyond msg_len
    mw::WriteExt e{};
    e.remote_addr.set(fx.rw.addr(0));
    e.rkey.set(fx.rw.key);
    auto h = fx.header(Opcode::kWrite, 0, 0, 32, 64);
    EXPECT_TRUE(fx.inject(forge_frame(fx.flow_a_to_b(), h, &e, sizeof(e), payload(64))).empty());
    ++drops;
  }
  {  // truncated: shorter than the common header
    auto frame = fx.write_frame(0, 0, fx.rw.addr(0), fx.rw.key, payload(64));
    std::vector<uint8_t> cut(frame.begin(), frame.begin() + mw::kUdpFrameHeaderBytes + 20);
    // Fix the IPv4/UDP lengths so the frame itself is well formed.
    std::vector<uint8_t> f2(cut.size());
    mw::encode_udp_headers(f2, fx.flow_a_to_b(), mw::Ecn::kNotEct, 0, 20);
    std::copy(cut.begin() + mw::kUdpFrameHeaderBytes, cut.end(), f2.begin() + mw::kUdpFrameHeaderBytes);
    EXPECT_TRUE(fx.inject(f2).empty());
    ++drops;
  }
  EXPECT_EQ(fx.h.ep(kB).counters().drop_decode, drops);
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

TEST(Forged, WriteLongerThanMaxMessageRefused) {
  ForgeFixture fx;
  mw::WriteExt e{};
  e.remote_addr.set(fx.rw.addr(0));
  e.rkey.set(fx.rw.key);
  auto h = fx.header(Opcode::kWrite, 0, 0, (1u << 20) + 4096, 4096);
  auto tx = fx.inject(forge_frame(fx.flow_a_to_b(), h, &e, sizeof(e), payload(4096)));
  expect_nak(fx, tx, NakCode::kInvalidRequest, 0, 0, fx.conn.a);
  EXPECT_TRUE(fx.h.verify_all());
}

TEST(Forged, UnknownPathStreamAndFarMessageRefused) {
  ForgeFixture fx;
  {  // path_id beyond the connection's paths: dropped as malformed
    mw::WriteExt e{};
    e.remote_addr.set(fx.rw.addr(0));
    e.rkey.set(fx.rw.key);
    auto h = fx.header(Opcode::kWrite, 0, 0, 64, 64);
    h.path_id = 9;
    EXPECT_TRUE(fx.inject(forge_frame(fx.flow_a_to_b(), h, &e, sizeof(e), payload(64))).empty());
    EXPECT_EQ(fx.h.ep(kB).counters().drop_decode, 1u);
  }
  {  // a message far beyond the receive window: dropped, never placed
    auto tx = fx.inject(fx.write_frame(0, 100000, fx.rw.addr(0), fx.rw.key, payload(64)));
    EXPECT_TRUE(of_opcode(tx, Opcode::kNak).empty());
    EXPECT_EQ(fx.h.ep(kB).counters().drop_out_of_window, 1u);
  }
  {  // a stream the connection does not have: refused as invalid
    auto tx = fx.inject(fx.write_frame(7, 0, fx.rw.addr(0), fx.rw.key, payload(64)));
    expect_nak(fx, tx, NakCode::kInvalidRequest, 7, 0, fx.conn.a);
  }
  EXPECT_TRUE(fx.h.verify_all());
  fx.expect_healthy_after();
}

}  // namespace
}  // namespace engine_test
