// Forged and malformed frames against live endpoints (issue 11): a lab with
// three daemons, a MetaRoCE and a RoCEv2 connection from h0 to h1, and frames
// an attacker on the fabric would send, written straight into h1's plane-0
// veth from the fabric namespace (so neither the fabric node nor its loss sees
// them). Every frame must be refused and counted under its own cause in h1's
// GetCounters, and the connections' target regions at h1 must still hold
// exactly the pattern they were filled with (Peer.Verify checks every byte).
// Each group ends with a control: the same forgery made valid does land, so
// the refusals are real refusals and the memory check can fail.
// Needs root, netns and AF_XDP: SKIPPED with the reason otherwise.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "forge_frame.h"
#include "lab_daemons.h"
#include "metaroce/datapath/netns.h"
#include "metaroce/v1/connection.grpc.pb.h"
#include "metaroce/v1/daemon.grpc.pb.h"

namespace {

namespace v1 = metaroce::v1;
namespace mw = metaroce::wire;
namespace rv = metaroce::wire::rocev2;
using daemon_test::Lab;
using engine_test::forge_frame;
using engine_test::forge_rocev2_frame;
namespace ml = metaroce::lab;

// A gRPC client of one lab daemon, with the lab's token.
class Client {
 public:
  Client(const std::string& address, std::string token)
      : channel_(grpc::CreateChannel(address, grpc::InsecureChannelCredentials())), token_(std::move(token)) {}

  template <typename Stub, typename Req, typename Resp>
  grpc::Status call(grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*), const Req& req,
                    Resp* resp, std::unique_ptr<Stub>& stub) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + token_);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
    return ((*stub).*method)(&ctx, req, resp);
  }

  v1::ConnectionInfo connect(const std::string& peer, v1::Transport transport, uint32_t streams, uint64_t seed) {
    v1::CreateConnectionRequest req;
    req.set_peer_address(peer);
    req.set_seed(seed);
    auto* p = req.mutable_params();
    p->set_transport(transport);
    if (transport == v1::TRANSPORT_METAROCE) p->set_paths(2);
    p->set_streams(streams);
    p->set_queue_depth(2);
    p->set_max_message_bytes(64 * 1024);
    v1::ConnectionInfo info;
    const grpc::Status s = call(&v1::Connections::Stub::Create, req, &info, connections_);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return info;
  }

  // Peer.Verify as after a job that completed nothing: every slot must still
  // hold the pattern the region was filled with.
  v1::VerifyResponse verify_untouched(uint32_t responder_id, uint32_t streams) {
    v1::VerifyRequest req;
    req.set_responder_id(responder_id);
    req.set_operation("write");
    auto* phase = req.add_phases();
    phase->set_message_bytes(1);
    for (uint32_t s = 0; s < streams; ++s) phase->add_stream_end(0);
    v1::VerifyResponse resp;
    const grpc::Status s = call(&v1::Peer::Stub::Verify, req, &resp, peer_);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  // "name" or "name{label}" -> value, for the endpoint's counters.
  std::map<std::string, double> counters() {
    v1::Counters c;
    const grpc::Status s = call(&v1::Daemon::Stub::GetCounters, v1::GetCountersRequest(), &c, daemon_);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::map<std::string, double> out;
    for (const auto& k : c.counters()) {
      std::string key = k.name();
      for (const auto& [label, value] : k.labels()) key += "{" + value + "}";
      out[key] += k.value();
    }
    return out;
  }

  bool alive() {
    v1::DaemonInfo info;
    return call(&v1::Daemon::Stub::GetInfo, v1::GetInfoRequest(), &info, daemon_).ok();
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::string token_;
  std::unique_ptr<v1::Connections::Stub> connections_ = v1::Connections::NewStub(channel_);
  std::unique_ptr<v1::Peer::Stub> peer_ = v1::Peer::NewStub(channel_);
  std::unique_ptr<v1::Daemon::Stub> daemon_ = v1::Daemon::NewStub(channel_);
};

// A raw socket on the fabric-side end of h1's plane-0 veth: what it sends
// arrives at h1's p0 as if the fabric node had forwarded it.
class Injector {
 public:
  Injector(const Lab& lab, Client& h1) : h1_(h1) {
    metaroce::datapath::ScopedNetns in(ml::fabric_netns(lab.name()));
    fd_ = socket(AF_PACKET, SOCK_RAW, 0);  // protocol 0: send only, receive nothing
    const std::string ifname = ml::fabric_ifname(1, 0);
    ifindex_ = static_cast<int>(if_nametoindex(ifname.c_str()));
    if (fd_ < 0 || ifindex_ == 0) throw std::runtime_error("raw socket on " + ifname + ": " + std::strerror(errno));
  }
  ~Injector() {
    if (fd_ >= 0) close(fd_);
  }

  // Sends one frame and waits (bounded) until h1's engine has taken it, so
  // the next frame cannot overtake it and every counter read sees it.
  void send(const std::vector<uint8_t>& frame) {
    const double before = h1_.counters()["endpoint_frames_in_total"];
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = ifindex_;
    to.sll_halen = 6;
    std::memcpy(to.sll_addr, frame.data(), 6);
    ASSERT_EQ(sendto(fd_, frame.data(), frame.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to)),
              static_cast<ssize_t>(frame.size()))
        << std::strerror(errno);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (h1_.counters()["endpoint_frames_in_total"] < before + 1) {
      ASSERT_LT(std::chrono::steady_clock::now(), until) << "h1's engine never received the forged frame";
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ++sent_;
  }
  uint64_t sent() const { return sent_; }

 private:
  Client& h1_;
  int fd_ = -1;
  int ifindex_ = 0;
  uint64_t sent_ = 0;
};

// Counter changes between two snapshots.
std::map<std::string, double> delta(const std::map<std::string, double>& after,
                                    const std::map<std::string, double>& before) {
  std::map<std::string, double> d;
  for (const auto& [k, v] : after) {
    const auto it = before.find(k);
    const double was = it == before.end() ? 0 : it->second;
    if (v != was && (k.rfind("endpoint_drops_total", 0) == 0 || k.rfind("endpoint_naks_sent_total", 0) == 0))
      d[k] = v - was;
  }
  return d;
}

std::string show(const std::map<std::string, double>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += "  " + k + " +" + std::to_string(static_cast<uint64_t>(v)) + "\n";
  return s.empty() ? "  (nothing)\n" : s;
}

std::vector<uint8_t> bytes(size_t n, uint8_t value) { return std::vector<uint8_t>(n, value); }

}  // namespace

TEST(DaemonForged, ForgedAndMalformedFramesAreRefusedCountedAndChangeNoMemory) {
  NEED_LAB();
  Lab lab;
  Client h0(lab.server("h0"), lab.token()), h1(lab.server("h1"), lab.token());
  constexpr uint32_t kStreams = 6;
  const v1::ConnectionInfo mr = h0.connect(lab.server("h1"), v1::TRANSPORT_METAROCE, kStreams, 11);
  const v1::ConnectionInfo rc = h0.connect(lab.server("h1"), v1::TRANSPORT_ROCEV2, 1, 12);
  const v1::ConnectionInfo rc_control = h0.connect(lab.server("h1"), v1::TRANSPORT_ROCEV2, 1, 13);
  ASSERT_NE(mr.remote_id(), 0u);
  ASSERT_NE(rc.remote_id(), 0u);
  ASSERT_NE(rc_control.remote_id(), 0u);
  ASSERT_GE(mr.remote_length_bytes(), 4096u);
  ASSERT_TRUE(h1.verify_untouched(mr.remote_id(), kStreams).ok());
  ASSERT_TRUE(h1.verify_untouched(rc.remote_id(), 1).ok());
  ASSERT_TRUE(h1.verify_untouched(rc_control.remote_id(), 1).ok());

  // Addresses as the lab assigns them: both endpoints use their plane-0 IP and MAC.
  mw::UdpFlow flow;
  flow.src_mac = ml::host_mac(lab.config(), 0, 0);
  flow.dst_mac = ml::host_mac(lab.config(), 1, 0);
  flow.src_ip = ml::host_ip(lab.config(), 0, 0);
  flow.dst_ip = ml::host_ip(lab.config(), 1, 0);
  flow.src_port = 49152;
  flow.dst_port = mw::kDefaultUdpPort;
  Injector inject(lab, h1);

  // ---------------------------------------------------------------- MetaRoCE
  const uint64_t base = mr.remote_addr(), end = mr.remote_addr() + mr.remote_length_bytes();
  uint32_t path_seq = 0;
  auto header = [&](mw::Opcode op, uint16_t stream, uint32_t msg_len, size_t payload_len) {
    mw::CommonHeader h{};
    h.version = mw::kVersion << 4;
    h.opcode = static_cast<uint8_t>(op);
    h.flags = mw::kFlagFirst | mw::kFlagLast | mw::kFlagAckReq;
    h.dst_conn_id.set(mr.remote_id());
    h.src_conn_id.set(mr.id());
    h.stream_id.set(stream);
    h.payload_len.set(static_cast<uint16_t>(payload_len));
    h.path_seq.set(path_seq++);
    h.msg_len.set(msg_len);
    h.tx_ts.set(1);
    return h;
  };
  auto write = [&](uint16_t stream, uint64_t addr, uint32_t rkey, const std::vector<uint8_t>& payload) {
    mw::WriteExt e{};
    e.remote_addr.set(addr);
    e.rkey.set(rkey);
    const auto h = header(mw::Opcode::kWrite, stream, static_cast<uint32_t>(payload.size()), payload.size());
    return forge_frame(flow, h, &e, sizeof(e), payload);
  };
  const auto payload = bytes(512, 0xA5);

  auto before = h1.counters();
  {
    // The wrong key for the right region: a blind guess.
    inject.send(write(0, base, mr.rkey() ^ 0x5A5A0000u, payload));
    // The right key; the first 1 KiB packet of a 4 KiB message lies inside the
    // region, the message runs 2 KiB past its end: refused whole, not in part.
    {
      const auto first = bytes(1024, 0x3C);
      auto h = header(mw::Opcode::kWrite, 1, 4096, first.size());
      h.flags = mw::kFlagFirst | mw::kFlagAckReq;
      mw::WriteExt e{};
      e.remote_addr.set(end - 2048);
      e.rkey.set(mr.rkey());
      inject.send(forge_frame(flow, h, &e, sizeof(e), first));
    }
    // READ and FETCH_ADD past the end: nothing may be read out or added.
    mw::ReadReqExt r{};
    r.remote_addr.set(end - 8);
    r.rkey.set(mr.rkey());
    r.length.set(64);
    inject.send(forge_frame(flow, header(mw::Opcode::kReadReq, 2, 0, 0), &r, sizeof(r)));
    mw::AtomicExt a{};
    a.remote_addr.set(end);
    a.rkey.set(mr.rkey());
    a.operand.set(1);
    inject.send(forge_frame(flow, header(mw::Opcode::kFetchAdd, 3, 0, 0), &a, sizeof(a)));
    // A valid write, one payload bit flipped after the CRC was computed.
    auto corrupt = write(4, base, mr.rkey(), payload);
    corrupt[mw::kUdpFrameHeaderBytes + 40 + 16 + 7] ^= 0x10;
    inject.send(corrupt);
    // A valid write of another version, and with an opcode v1 does not have.
    auto version = write(4, base, mr.rkey(), payload);
    version[mw::kUdpFrameHeaderBytes] = 0x20;
    inject.send(version);
    auto opcode = write(4, base, mr.rkey(), payload);
    opcode[mw::kUdpFrameHeaderBytes + 1] = 0x7E;
    inject.send(opcode);
    // 20 bytes of UDP payload: shorter than the common header.
    std::vector<uint8_t> shorter(mw::kUdpFrameHeaderBytes + 20, 0);
    mw::encode_udp_headers(shorter, flow, mw::Ecn::kNotEct, 0, 20);
    inject.send(shorter);
    // A valid write for a connection id h1 does not have (answered with one NAK).
    {
      auto h = header(mw::Opcode::kWrite, 4, static_cast<uint32_t>(payload.size()), payload.size());
      h.dst_conn_id.set(mr.remote_id() ^ 0x800001u);
      mw::WriteExt e{};
      e.remote_addr.set(base);
      e.rkey.set(mr.rkey());
      inject.send(forge_frame(flow, h, &e, sizeof(e), payload));
    }
    // A valid write from a spoofed source address.
    {
      mw::UdpFlow spoofed = flow;
      spoofed.src_ip = flow.src_ip + 100;
      auto h = header(mw::Opcode::kWrite, 4, static_cast<uint32_t>(payload.size()), payload.size());
      mw::WriteExt e{};
      e.remote_addr.set(base);
      e.rkey.set(mr.rkey());
      inject.send(forge_frame(spoofed, h, &e, sizeof(e), payload));
    }
    // A valid write far outside the path's sequence window.
    {
      auto h = header(mw::Opcode::kWrite, 4, static_cast<uint32_t>(payload.size()), payload.size());
      h.path_seq.set(100000);
      h.path_floor.set(100000 - 300);
      mw::WriteExt e{};
      e.remote_addr.set(base);
      e.rkey.set(mr.rkey());
      inject.send(forge_frame(flow, h, &e, sizeof(e), payload));
    }
    // A valid write addressed to another host's IP.
    {
      mw::UdpFlow other = flow;
      other.dst_ip = flow.dst_ip + 100;
      auto h = header(mw::Opcode::kWrite, 4, static_cast<uint32_t>(payload.size()), payload.size());
      mw::WriteExt e{};
      e.remote_addr.set(base);
      e.rkey.set(mr.rkey());
      inject.send(forge_frame(other, h, &e, sizeof(e), payload));
    }
  }
  const std::map<std::string, double> want_metaroce = {
      {"endpoint_naks_sent_total{bad_key}", 1},
      {"endpoint_naks_sent_total{out_of_bounds}", 3},
      {"endpoint_drops_total{checksum}", 1},
      {"endpoint_drops_total{bad_version}", 1},
      {"endpoint_drops_total{bad_opcode}", 1},
      {"endpoint_drops_total{decode}", 1},
      {"endpoint_drops_total{unknown_connection}", 1},
      {"endpoint_naks_sent_total{unknown_connection}", 1},
      {"endpoint_drops_total{wrong_peer}", 1},
      {"endpoint_drops_total{out_of_window}", 1},
      {"endpoint_drops_total{not_ours}", 1},
  };
  auto after = h1.counters();
  EXPECT_EQ(delta(after, before), want_metaroce) << "h1 counted:\n" << show(delta(after, before)) << "want:\n"
                                                 << show(want_metaroce);
  const v1::VerifyResponse mr_verify = h1.verify_untouched(mr.remote_id(), kStreams);
  EXPECT_TRUE(mr_verify.ok()) << "a forged MetaRoCE frame changed h1's memory: " << mr_verify.detail();
  EXPECT_EQ(mr_verify.checked_bytes(), mr.remote_length_bytes() - 8 * kStreams) << "every slot was checked";

  // Control: the same write, valid, on a stream no refusal touched, lands.
  before = h1.counters();
  inject.send(write(5, base + 4096, mr.rkey(), payload));
  EXPECT_EQ(delta(h1.counters(), before), (std::map<std::string, double>{})) << "the control write was refused";
  const v1::VerifyResponse mr_control = h1.verify_untouched(mr.remote_id(), kStreams);
  EXPECT_FALSE(mr_control.ok()) << "a valid forged write left no trace: the memory check cannot fail";
  EXPECT_EQ(mr_control.mismatches(), 1u) << mr_control.detail();

  // ------------------------------------------------------------------ RoCEv2
  mw::UdpFlow rflow = flow;
  rflow.dst_port = rv::kUdpPort;
  const uint32_t qp = rc.remote_id();
  const uint64_t rbase = rc.remote_addr(), rend = rc.remote_addr() + rc.remote_length_bytes();
  auto reth = [](uint64_t va, uint32_t rkey, uint32_t len) {
    rv::Reth r{};
    r.va.set(va);
    r.rkey.set(rkey);
    r.dma_len.set(len);
    return r;
  };
  const auto in_range = reth(rbase, rc.rkey(), 512);
  before = h1.counters();
  {
    auto corrupt = forge_rocev2_frame(rflow, rv::Opcode::kWriteOnly, qp, 0, &in_range, payload);
    corrupt[mw::kUdpFrameHeaderBytes + 12 + 16 + 3] ^= 0x01;
    inject.send(corrupt);
    // Transport version 1 (BTH TVer), resealed so only the version is wrong.
    auto version = forge_rocev2_frame(rflow, rv::Opcode::kWriteOnly, qp, 0, &in_range, payload);
    version[mw::kUdpFrameHeaderBytes + 1] |= 0x01;
    rv::seal_icrc(version);
    inject.send(version);
    auto opcode = forge_rocev2_frame(rflow, rv::Opcode::kWriteOnly, qp, 0, &in_range, payload);
    opcode[mw::kUdpFrameHeaderBytes] = 0x1F;
    rv::seal_icrc(opcode);
    inject.send(opcode);
    std::vector<uint8_t> shorter(mw::kUdpFrameHeaderBytes + 8, 0);
    mw::encode_udp_headers(shorter, rflow, mw::Ecn::kNotEct, 0, 8);
    inject.send(shorter);
    inject.send(forge_rocev2_frame(rflow, rv::Opcode::kWriteOnly, qp ^ 0x800001u, 0, &in_range, payload));
    mw::UdpFlow spoofed = rflow;
    spoofed.src_ip = rflow.src_ip + 100;
    inject.send(forge_rocev2_frame(spoofed, rv::Opcode::kWriteOnly, qp, 0, &in_range, payload));
    // PSN ahead of the expected one: one sequence-error NAK, nothing placed.
    inject.send(forge_rocev2_frame(rflow, rv::Opcode::kWriteOnly, qp, 7, &in_range, payload));
    // WRITE_FIRST whose first packet lies inside the region and whose RETH
    // range runs 2 KiB past it: NAKed, nothing placed (the whole range is
    // checked on the first packet), and the QP enters the error state...
    const auto past = reth(rend - 2048, rc.rkey(), 4096);
    inject.send(forge_rocev2_frame(rflow, rv::Opcode::kWriteFirst, qp, 0, &past, bytes(1024, 0x5C)));
    // ...where even a valid write is not placed.
    inject.send(forge_rocev2_frame(rflow, rv::Opcode::kWriteOnly, qp, 0, &in_range, payload));
  }
  const std::map<std::string, double> want_rocev2 = {
      {"endpoint_drops_total{checksum}", 1},
      {"endpoint_drops_total{bad_version}", 1},
      {"endpoint_drops_total{bad_opcode}", 1},
      {"endpoint_drops_total{decode}", 1},
      {"endpoint_drops_total{unknown_connection}", 1},
      {"endpoint_drops_total{wrong_peer}", 1},
      {"endpoint_naks_sent_total{psn_sequence_error}", 1},
      {"endpoint_naks_sent_total{remote_access}", 1},
      {"endpoint_drops_total{qp_error}", 1},
  };
  after = h1.counters();
  EXPECT_EQ(delta(after, before), want_rocev2) << "h1 counted:\n" << show(delta(after, before)) << "want:\n"
                                               << show(want_rocev2);
  const v1::VerifyResponse rc_verify = h1.verify_untouched(rc.remote_id(), 1);
  EXPECT_TRUE(rc_verify.ok()) << "a forged RoCEv2 frame changed h1's memory: " << rc_verify.detail();

  // Control: the valid write on a QP that is not in the error state lands.
  before = h1.counters();
  const auto control_range = reth(rc_control.remote_addr(), rc_control.rkey(), 512);
  inject.send(forge_rocev2_frame(rflow, rv::Opcode::kWriteOnly, rc_control.remote_id(), 0, &control_range, payload));
  EXPECT_EQ(delta(h1.counters(), before), (std::map<std::string, double>{})) << "the control write was refused";
  const v1::VerifyResponse rc_control_verify = h1.verify_untouched(rc_control.remote_id(), 1);
  EXPECT_FALSE(rc_control_verify.ok()) << "a valid forged RoCEv2 write left no trace";
  EXPECT_EQ(rc_control_verify.mismatches(), 1u) << rc_control_verify.detail();

  EXPECT_TRUE(h1.alive());
  EXPECT_TRUE(h0.alive());
  std::cout << "[ forged   ] " << inject.sent() << " frames injected into h1's plane 0; every refusal counted by cause\n";
}
