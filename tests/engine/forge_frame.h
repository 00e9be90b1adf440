// Whole Ethernet/IPv4/UDP frames built the way an attacker on the fabric would
// build them: with the wire library's own encoders, so every field can be set
// to anything. Used by the engine's forged-packet tests (frames handed straight
// to Endpoint::on_frame) and by the live ones (frames sent into a lab's veth).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/rocev2.h"
#include "metaroce/wire/udp_frame.h"

namespace engine_test {

namespace mw = metaroce::wire;

// One MetaRoCE packet (CRC32C trailer included) in a frame.
inline std::vector<uint8_t> forge_frame(const mw::UdpFlow& flow, const mw::CommonHeader& h, const void* ext,
                                        size_t ext_len, std::span<const uint8_t> payload = {}) {
  const auto op = static_cast<mw::Opcode>(h.opcode);
  const size_t udp_len = mw::packet_bytes(op, payload.size());
  std::vector<uint8_t> f(mw::kUdpFrameHeaderBytes + udp_len);
  const size_t hb = mw::encode_udp_headers(f, flow, mw::Ecn::kNotEct, 0, udp_len);
  EXPECT_EQ(hb, mw::kUdpFrameHeaderBytes);
  const size_t n = mw::encode_packet(std::span<uint8_t>(f).subspan(mw::kUdpFrameHeaderBytes), h, ext, ext_len, payload);
  EXPECT_EQ(n, udp_len);
  return f;
}

// One RoCEv2 packet (BTH, optional RETH, payload, ICRC sealed over the whole
// frame) in a frame; flow.dst_port should be rocev2::kUdpPort.
inline std::vector<uint8_t> forge_rocev2_frame(const mw::UdpFlow& flow, mw::rocev2::Opcode op, uint32_t dest_qp,
                                               uint32_t psn, const mw::rocev2::Reth* reth,
                                               std::span<const uint8_t> payload = {}) {
  namespace rv = mw::rocev2;
  const size_t udp_len = rv::payload_bytes(op, payload.size());
  std::vector<uint8_t> f(mw::kUdpFrameHeaderBytes + udp_len);
  EXPECT_EQ(mw::encode_udp_headers(f, flow, mw::Ecn::kNotEct, 0, udp_len), mw::kUdpFrameHeaderBytes);
  const size_t n = rv::encode(std::span<uint8_t>(f).subspan(mw::kUdpFrameHeaderBytes), op, dest_qp, psn, true, reth,
                              nullptr, nullptr, payload);
  EXPECT_EQ(n, udp_len);
  rv::seal_icrc(f);
  return f;
}

}  // namespace engine_test
