// The device under test (DUT) as the conformance suite sees it: an
// implementation of MetaRoCE wire v1 (docs/spec/metaroce-wire-v1.md) reached
// two ways.
//
//  * Control: set up the responder half of a connection with a target region
//    (what metaroce.v1 Peer.Accept does), check that region against the data
//    pattern (Peer.Verify), register a region with chosen rights
//    (Memory.Register), read the endpoint's configured inbound capacity.
//  * Packets: send a MetaRoCE packet (a UDP payload) to the DUT's endpoint
//    and read the packets it answers with; likewise RoCEv2 frames to and from
//    UDP 4791 (the go-back-N baseline, spec §12).
//
// In most cases the suite plays the requester. In the cases where the DUT is
// the sender, the DUT connects to the suite (its daemon calls Peer.Accept at
// the suite, as at any peer daemon) and runs a traffic job toward it; the suite
// then plays the responder. It builds every packet itself with the wire/
// encoders and judges every answer with the wire/ decoders, never with the
// transport engine, so that it judges an implementation independently of ours.
// GrpcDut (grpc_dut.h) is a real daemon; tests drive the same cases against
// in-process fakes.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/rocev2.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::conformance {

// A control-plane step failed (the DUT refused, or could not be reached). The
// message names the call and the DUT's answer.
class DutError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The suite was set up wrongly (an option names a bad address): a usage
// error, not a finding about the DUT.
class DutSetupError : public DutError {
 public:
  using DutError::DutError;
};

// Parameters of one connection the suite opens at the DUT (ConnectionParams of
// the API). Both halves must agree on them; the suite builds its packets from
// the same values.
struct ConnectionRequest {
  uint32_t tool_id = 0;               // the suite's own connection id (src_conn_id of its packets), [1, 2^24-1]
  uint32_t paths = 2;
  uint16_t streams = 1;
  uint32_t queue_depth = 4;           // the target region holds streams x 2 x queue_depth slots
  uint32_t mtu_payload = 256;         // chunk size
  uint32_t max_message_bytes = 1024;  // slot size
  uint64_t seed = 1;                  // data pattern of the target region
  uint32_t recv_message_bytes = 0;    // > 0: the DUT posts receives (WRITE_IMM completions are counted)
  bool rocev2 = false;                // a RoCEv2 RC QP (§12; paths 1, streams 1): the ids are QP numbers
};

struct DutConnection {
  uint32_t dut_id = 0;        // the DUT's connection id (dst_conn_id of the suite's packets)
  uint32_t tool_id = 0;
  uint64_t remote_addr = 0;   // target region
  uint32_t rkey = 0;
  uint64_t remote_length = 0;
  ConnectionRequest request;  // as opened
};

// Peer.Verify's answer.
struct VerifyOutcome {
  bool ok = false;
  uint64_t checked_bytes = 0;
  uint64_t mismatches = 0;
  uint64_t received_messages = 0;  // WRITE_IMM / SEND receive completions seen
  std::string detail;              // first mismatch
};

struct DutRegion {
  uint32_t key = 0;
  uint64_t addr = 0;
  uint64_t length = 0;
};

// A traffic job the DUT runs toward the suite (one connection, one stream,
// WRITEs or READs of message_bytes, path 0 .. paths-1; metaroce.v1 Traffic.Start).
struct SenderJob {
  std::string operation = "write"; // "write" or "read"
  uint32_t tool_id = 0;            // the suite's connection id, what it answers Peer.Accept with
  uint32_t paths = 1;
  uint32_t queue_depth = 4;        // outstanding messages
  uint32_t mtu_payload = 256;      // chunk size
  uint32_t max_message_bytes = 1024;
  uint32_t message_bytes = 512;
  uint64_t messages = 4;           // the job's iterations
  int64_t min_rto_ns = 50'000'000; // the DUT's retransmission timeout floor
  // The suite's target region as announced in its Peer.Accept answer.
  uint64_t region_addr = 0;
  uint32_t rkey = 0;
  uint64_t region_bytes = 0;
};

// The connection the DUT opened toward the suite.
struct SenderConnection {
  uint32_t dut_id = 0;   // the DUT's id (src_conn_id of its packets)
  uint32_t tool_id = 0;  // the suite's (dst_conn_id of its packets)
  uint64_t seed = 0;     // the DUT's data pattern (AcceptRequest.seed)
  uint64_t job_id = 0;
  SenderJob job;
};

// How the DUT's job ended (metaroce.v1 JobInfo).
struct SenderOutcome {
  bool ended = false;         // false: still running when the wait ran out
  std::string state;          // "DONE", "FAILED", ... as the DUT reports it
  uint64_t completion_errors = 0;
  uint64_t retransmits = 0;
  uint64_t rtos = 0;          // retransmission timeouts
  std::string error;          // the job's first error, "" when none
};

class Dut {
 public:
  virtual ~Dut() = default;
  // One line for reports: "metaroced 'd' at unix:///tmp/d.sock, endpoint 127.0.0.1:4794".
  virtual std::string describe() const = 0;

  virtual DutConnection open(const ConnectionRequest& request) = 0;  // throws DutError
  virtual void close(const DutConnection& connection) = 0;           // best effort, never throws
  // Checks the connection's target region after `operation` ("write",
  // "write_imm") messages of `message_bytes` completed, stream_end[s] on
  // stream s (indices from 0); Peer.Verify's contract.
  virtual VerifyOutcome verify(const DutConnection& connection, const std::string& operation, uint32_t message_bytes,
                               const std::vector<uint64_t>& stream_end) = 0;  // throws DutError
  // A region with exactly these rights ("remote_write", "remote_read",
  // "remote_atomic", "local_write"); throws DutError.
  virtual DutRegion register_region(uint64_t length, const std::vector<std::string>& access) = 0;
  virtual void deregister_region(uint32_t key) = 0;  // best effort, never throws
  // The endpoint's configured inbound capacity (what its rate hint shares);
  // 0 = none configured. Throws DutError.
  virtual double inbound_capacity_bps() = 0;

  // The DUT as the sender: it opens a connection to the suite and starts
  // `job`; returns once the DUT's Peer.Accept reached the suite (bounded by
  // `timeout`). Throws DutError.
  virtual SenderConnection start_sender(const SenderJob& job, std::chrono::milliseconds timeout) = 0;
  // Waits (bounded) until the job has ended and its connection is gone.
  virtual SenderOutcome finish_sender(const SenderConnection& connection, std::chrono::milliseconds timeout) = 0;
  // Stops the job if it still runs; best effort, never throws.
  virtual void stop_sender(const SenderConnection& connection) = 0;

  // One MetaRoCE packet (a whole UDP payload, CRC trailer included) to the
  // DUT's endpoint, with this IP ECN codepoint (data: ECT(0), §1.4; CE to
  // stand for a congested switch). Throws DutError when it cannot be sent.
  virtual void send(std::span<const uint8_t> packet, wire::Ecn ecn) = 0;
  // The next UDP payload the DUT sent to the suite, or nullopt when none
  // arrives within `timeout`.
  virtual std::optional<std::vector<uint8_t>> receive(std::chrono::milliseconds timeout) = 0;

  // RoCEv2 (§12). A whole Eth/IPv4/UDP frame on rocev2_flow_to_dut() with its
  // ICRC sealed (the ICRC covers the IP and UDP headers); what crosses is its
  // UDP payload. Throws DutError when it cannot be sent.
  virtual void send_rocev2(std::span<const uint8_t> frame) = 0;
  // The next RoCEv2 frame the DUT sent to the suite's UDP 4791, its
  // Eth/IPv4/UDP headers as the DUT sent them (IPv4 id 0 and DF, as kernel UDP
  // sockets send), or nullopt when none arrives within `timeout`.
  virtual std::optional<std::vector<uint8_t>> receive_rocev2(std::chrono::milliseconds timeout) = 0;
  // From the suite's RoCEv2 port to the DUT's (both wire::rocev2::kUdpPort).
  virtual wire::UdpFlow rocev2_flow_to_dut() const {
    wire::UdpFlow f = flow_to_dut();
    f.src_port = f.dst_port = wire::rocev2::kUdpPort;
    return f;
  }

  // Addresses and ports from the suite to the DUT, to frame the packets of a
  // case in its pcap (the reverse flow for the DUT's packets).
  virtual wire::UdpFlow flow_to_dut() const {
    wire::UdpFlow f;
    f.src_ip = 0x0A000001;  // 10.0.0.1 -> 10.0.0.2: a DUT without real addresses
    f.dst_ip = 0x0A000002;
    f.src_port = f.dst_port = wire::kDefaultUdpPort;
    return f;
  }
};

}  // namespace metaroce::conformance
