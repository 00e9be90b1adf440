// Writes a seed corpus for fuzz_wire_decode into the directory given as argv[1]:
// one valid Eth/IPv4/UDP frame per MetaRoCE opcode (dst port 4794), the same
// packets as bare UDP payloads, and RoCEv2 frames (dst port 4791). Seeds are
// generated rather than checked in so they always match the current encoder.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "metaroce/wire/bytes.h"
#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/rocev2.h"
#include "metaroce/wire/udp_frame.h"

namespace w = metaroce::wire;

namespace {

std::string g_dir;
int g_count = 0;

void write_seed(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = g_dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fclose(f);
  ++g_count;
}

std::vector<uint8_t> frame_around(const std::vector<uint8_t>& udp_payload, uint16_t dst_port) {
  w::UdpFlow flow;
  flow.src_mac = {0x02, 0, 0, 0, 0, 1};
  flow.dst_mac = {0x02, 0, 0, 0, 0, 2};
  flow.src_ip = 0x0A000001;
  flow.dst_ip = 0x0A000002;
  flow.src_port = 0xC001;
  flow.dst_port = dst_port;
  std::vector<uint8_t> frame(w::kUdpFrameHeaderBytes + udp_payload.size());
  w::encode_udp_headers(frame, flow, w::Ecn::kEct0, 0, udp_payload.size());
  std::memcpy(frame.data() + w::kUdpFrameHeaderBytes, udp_payload.data(), udp_payload.size());
  return frame;
}

void metaroce_seed(const char* name, w::Opcode op, const void* ext, size_t ext_len, size_t payload_len,
                   size_t blocks = 0) {
  w::CommonHeader c{};
  c.version = w::kVersion << 4;
  c.opcode = static_cast<uint8_t>(op);
  c.flags = w::kFlagFirst | w::kFlagLast | w::kFlagAckReq;
  c.path_id = 1;
  c.dst_conn_id.set(7);
  c.src_conn_id.set(9);
  c.stream_id.set(1);
  c.payload_len.set(static_cast<uint16_t>(payload_len));
  c.path_seq.set(100);
  c.path_floor.set(90);
  c.msg_seq.set(5);
  c.msg_len.set(static_cast<uint32_t>(payload_len));
  c.tx_ts.set(123456);
  std::vector<uint8_t> payload(payload_len, 0x5A);
  std::vector<w::AckBlock> ack(blocks);
  for (size_t i = 0; i < blocks; ++i) {
    ack[i].path_id = static_cast<uint8_t>(i);
    ack[i].cum_seq.set(100);
    w::sack_set(ack[i].sack, 1);
  }
  std::vector<uint8_t> pkt(w::packet_bytes(op, payload_len, blocks));
  w::encode_packet(pkt, c, ext, ext_len, payload, ack);
  write_seed(std::string("mr_") + name, pkt);
  write_seed(std::string("mr_frame_") + name, frame_around(pkt, w::kDefaultUdpPort));
}

void rocev2_seed(const char* name, w::rocev2::Opcode op, const w::rocev2::Reth* reth, const uint32_t* imm,
                 const w::rocev2::Aeth* aeth, size_t payload_len) {
  std::vector<uint8_t> payload(payload_len, 0xA5);
  std::vector<uint8_t> udp(w::rocev2::payload_bytes(op, payload_len));
  w::rocev2::encode(udp, op, 0x11, 0x22, true, reth, imm, aeth, payload);
  auto frame = frame_around(udp, w::rocev2::kUdpPort);
  w::rocev2::seal_icrc(frame);
  write_seed(std::string("roce_frame_") + name, frame);
  write_seed(std::string("roce_") + name, udp);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];

  w::WriteExt we{};
  we.remote_addr.set(0x1000);
  we.rkey.set(0x42);
  w::SendExt se{};
  w::ReadReqExt rr{};
  rr.length.set(4096);
  w::AtomicExt ae{};
  w::AtomicRespExt are{};
  w::AckExt ack1{}, ack8{};
  ack1.num_blocks = 1;
  ack8.num_blocks = 8;
  w::NakExt nak{};
  nak.code = static_cast<uint8_t>(w::NakCode::kRnr);

  metaroce_seed("write", w::Opcode::kWrite, &we, sizeof we, 64);
  metaroce_seed("write_imm", w::Opcode::kWriteImm, &we, sizeof we, 3);
  metaroce_seed("send", w::Opcode::kSend, &se, sizeof se, 32);
  metaroce_seed("send_imm", w::Opcode::kSendImm, &se, sizeof se, 0);
  metaroce_seed("read_req", w::Opcode::kReadReq, &rr, sizeof rr, 0);
  metaroce_seed("read_resp", w::Opcode::kReadResp, nullptr, 0, 16);
  metaroce_seed("fetch_add", w::Opcode::kFetchAdd, &ae, sizeof ae, 0);
  metaroce_seed("cmp_swap", w::Opcode::kCmpSwap, &ae, sizeof ae, 0);
  metaroce_seed("atomic_resp", w::Opcode::kAtomicResp, &are, sizeof are, 0);
  metaroce_seed("probe", w::Opcode::kProbe, nullptr, 0, 0);
  metaroce_seed("ack1", w::Opcode::kAck, &ack1, sizeof ack1, 0, 1);
  metaroce_seed("ack8", w::Opcode::kAck, &ack8, sizeof ack8, 0, 8);
  metaroce_seed("nak", w::Opcode::kNak, &nak, sizeof nak, 0);

  using R = w::rocev2::Opcode;
  w::rocev2::Reth reth{};
  reth.dma_len.set(64);
  const uint32_t imm = 7;
  w::rocev2::Aeth aeth{};
  rocev2_seed("write_first", R::kWriteFirst, &reth, nullptr, nullptr, 32);
  rocev2_seed("write_middle", R::kWriteMiddle, nullptr, nullptr, nullptr, 32);
  rocev2_seed("write_last", R::kWriteLast, nullptr, nullptr, nullptr, 5);
  rocev2_seed("write_only_imm", R::kWriteOnlyImm, &reth, &imm, nullptr, 7);
  rocev2_seed("send_only_imm", R::kSendOnlyImm, nullptr, &imm, nullptr, 9);
  rocev2_seed("read_request", R::kReadRequest, &reth, nullptr, nullptr, 0);
  rocev2_seed("ack", R::kAcknowledge, nullptr, nullptr, &aeth, 0);

  std::printf("wrote %d seeds to %s\n", g_count, g_dir.c_str());
  return 0;
}
