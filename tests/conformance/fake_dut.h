// An in-process MetaRoCE v1 responder written for the conformance tests from
// the spec and the wire/ decoders alone (no transport engine): a second,
// independent implementation the suite must pass, and, with one of its Bugs
// switched on, a deliberately broken endpoint that must fail exactly the cases
// that check the broken behaviour. The bugs live only here: nothing in the
// shipped engine's hot path knows about them.
//
// It answers synchronously: send() processes the packet and queues the
// answers, receive() hands them out (nullopt when none is queued); likewise
// send_rocev2() and receive_rocev2() for its RoCEv2 RC responder (§12). As a
// sender (start_sender) it writes its job's messages on path 0 at once and
// reacts to the suite's ACKs as §11.4 says (reorder threshold 1, no timers).
#pragma once

#include <bitset>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "metaroce/conformance/dut.h"
#include "metaroce/wire/metaroce.h"

namespace conformance_test {

struct Bugs {
  bool ignore_sack_gaps = false;       // ACK blocks carry cum_seq only, the SACK bits always 0
  bool accept_wrong_key = false;       // a WRITE whose rkey names no region lands in the connection's region anyway
  bool no_crc_check = false;           // frames with a bad CRC32C are repaired and processed
  bool complete_out_of_order = false;  // a message counts as complete when its LAST-flagged chunk arrives
  bool place_duplicates = false;       // a repeated chunk is placed again (not completed again)
  bool silent_unknown_connection = false;  // no UNKNOWN_CONNECTION NAK
  bool ignore_path_floor = false;      // the receiver never slides its window to the sender's path_floor
  bool no_rate_hint = false;           // rate_hint_kbps always 0
  bool no_ecn_echo = false;            // CE marks are not counted
  bool replay_atomics = false;         // a repeated atomic request is executed (and answered) again
  bool complete_in_arrival_order = false;  // a WRITE_IMM completes when its bytes are in, not in msg_seq order
  bool place_first_chunk_only = false; // later chunks of a message are acknowledged and counted, not placed
  bool swap_without_compare = false;   // CMP_SWAP always writes its swap value
  // As the sender (requester) of a job:
  bool go_back_n = false;              // a hole resends it and everything sent after it (SACKed or not)
  bool no_fast_retransmit = false;     // a SACKed hole is never retransmitted (it has no timer either)
  bool retransmit_same_seq = false;    // a retransmission reuses the lost packet's path_seq
  bool complete_reads_in_arrival_order = false;  // a READ completes when its response is in, not in post order
  // As a RoCEv2 responder (§12):
  bool nak_every_oos_psn = false;      // every out-of-sequence request is NAKed, not only the first of a gap
  bool never_nak_oos_psn = false;      // out-of-sequence requests are dropped unanswered (only a timer recovers)
  bool place_oos_psn = false;          // an out-of-sequence WRITE is placed (and NAKed all the same)
};

class FakeDut final : public metaroce::conformance::Dut {
 public:
  explicit FakeDut(Bugs bugs = {}, double inbound_capacity_bps = 10e9);

  std::string describe() const override { return "in-process fake responder"; }
  metaroce::conformance::DutConnection open(const metaroce::conformance::ConnectionRequest& request) override;
  void close(const metaroce::conformance::DutConnection& connection) override;
  metaroce::conformance::VerifyOutcome verify(const metaroce::conformance::DutConnection& connection,
                                              const std::string& operation, uint32_t message_bytes,
                                              const std::vector<uint64_t>& stream_end) override;
  metaroce::conformance::DutRegion register_region(uint64_t length, const std::vector<std::string>& access) override;
  void deregister_region(uint32_t key) override;
  double inbound_capacity_bps() override { return capacity_bps_; }
  metaroce::conformance::SenderConnection start_sender(const metaroce::conformance::SenderJob& job,
                                                       std::chrono::milliseconds timeout) override;
  metaroce::conformance::SenderOutcome finish_sender(const metaroce::conformance::SenderConnection& connection,
                                                     std::chrono::milliseconds timeout) override;
  void stop_sender(const metaroce::conformance::SenderConnection& connection) override;
  void send(std::span<const uint8_t> packet, metaroce::wire::Ecn ecn) override;
  std::optional<std::vector<uint8_t>> receive(std::chrono::milliseconds timeout) override;
  void send_rocev2(std::span<const uint8_t> frame) override;
  std::optional<std::vector<uint8_t>> receive_rocev2(std::chrono::milliseconds timeout) override;

 private:
  struct Region {
    uint64_t addr = 0;
    std::vector<uint8_t> bytes;
    bool remote_write = false, remote_atomic = false, remote_read = false;
  };
  struct PathRx {
    uint32_t cum = 0;
    std::bitset<256> bits;  // bit i: cum + 1 + i received
    uint16_t ce = 0;
    uint32_t echo = 0;
    uint16_t stream = 0;
  };
  struct Msg {
    bool complete = false, failed = false, imm = false;
    uint32_t imm_value = 0;
    uint8_t nak = 0;
    uint32_t len = 0, chunks = 0, received = 0;
    std::vector<bool> got;
  };
  struct Stream {
    uint32_t base = 0;  // the watermark
    std::map<uint32_t, Msg> msgs;
    bool error = false;
    uint64_t completions = 0;
    std::vector<uint32_t> completed_imms;  // immediates of the receive completions, in completion order
  };
  struct Conn {
    metaroce::conformance::ConnectionRequest request;
    uint32_t dut_id = 0;
    uint32_t key = 0;  // the target region's
    std::vector<PathRx> paths;
    std::vector<Stream> streams;
    uint32_t tx_seq = 0;  // the fake's own path 0 sequence (its responses)
    // RoCEv2 QP (request.rocev2): the responder's expected PSN, and whether
    // the current gap was NAKed already.
    uint32_t epsn = 0, msn = 0;
    bool nak_sent = false;
  };

  // A job of the fake toward the suite (path 0 only).
  struct Tx {
    uint32_t msg = 0, offset = 0;
    bool resolved = false;  // acknowledged, or declared lost and sent again
  };
  struct Sender {
    metaroce::conformance::SenderConnection conn;
    uint32_t next_seq = 0;
    std::map<uint32_t, Tx> txs;  // by path_seq
    uint64_t posted = 0, watermark = 0, retransmits = 0;
    uint64_t completed = 0;                                  // READs completed, in post order
    std::map<uint32_t, std::set<uint32_t>> responses;        // READ: offsets of each message's response
    std::set<uint32_t> arrived;                              // READ: messages whose response is complete
    metaroce::conformance::SenderOutcome outcome;
  };
  void post_messages(Sender& s);
  void transmit(Sender& s, uint32_t msg, uint32_t offset, bool retx, std::optional<uint32_t> seq = std::nullopt);
  void on_sender_ack(Sender& s, const metaroce::wire::PacketView& v);
  void on_read_response(Sender& s, const metaroce::wire::PacketView& v);
  void complete(Sender& s, uint32_t msg);

  void on_packet(Conn& c, const metaroce::wire::PacketView& v, bool ce);
  void on_write(Conn& c, const metaroce::wire::PacketView& v);
  void on_atomic(Conn& c, const metaroce::wire::PacketView& v);
  void on_read(Conn& c, const metaroce::wire::PacketView& v);
  void rocev2_answer(const Conn& c, const metaroce::wire::UdpFlow& request, uint8_t syndrome, uint32_t psn);
  void advance(PathRx& p);
  void ack(Conn& c, uint8_t path);
  void nak(uint32_t dst, uint32_t src, const metaroce::wire::PacketView& v, metaroce::wire::NakCode code);
  // 0 when the access is allowed (*out points at the bytes), else the NAK code.
  enum class Right { kWrite, kRead, kAtomic };
  uint8_t check(uint32_t key, uint64_t addr, uint64_t len, Right right, uint8_t** out);

  Bugs bugs_;
  double capacity_bps_;
  uint32_t next_id_ = 0x100;
  uint32_t next_key_ = 0x4200;
  std::map<uint32_t, Conn> conns_;     // by DUT id
  std::map<uint32_t, Region> regions_;  // by key
  std::map<uint32_t, Sender> senders_;  // running jobs, by the fake's connection id
  std::map<uint64_t, metaroce::conformance::SenderOutcome> ended_;  // by job id
  std::deque<std::vector<uint8_t>> out_;
  std::deque<std::vector<uint8_t>> rocev2_out_;  // whole frames
};

}  // namespace conformance_test
