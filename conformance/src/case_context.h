// What a case has at hand: its connections at the DUT, a packet builder, the
// fence-bounded collection of answers, checks that fail with "expected ...;
// seen ..." and the transcript of everything sent and seen.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "metaroce/conformance/dut.h"
#include "metaroce/conformance/suite.h"
#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/rocev2.h"

namespace metaroce::conformance {

// printf-style text for expectations and packet descriptions (bounded).
template <typename... Args>
std::string format(const char* fmt, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

// The flags of a message carried in one packet that asks to be acknowledged.
inline constexpr uint8_t kOnePacketMessage = wire::kFlagAckReq | wire::kFlagFirst | wire::kFlagLast;

// Thrown by a failed check: the case stops and fails with this message.
class CaseFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One packet the suite sends, as fields; built into bytes by CaseContext::build.
struct Outgoing {
  wire::Opcode op = wire::Opcode::kWrite;
  uint8_t flags = 0;
  uint8_t path = 0;
  uint32_t dst_conn = 0, src_conn = 0;
  uint16_t stream = 0;
  uint32_t seq = 0, floor = 0;
  uint32_t msg_seq = 0, msg_offset = 0, msg_len = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0, imm = 0;
  uint64_t operand = 0, compare = 0;  // FETCH_ADD, CMP_SWAP
  uint32_t read_length = 0;            // READ_REQ
  std::vector<uint8_t> payload;
};

struct Built {
  std::vector<uint8_t> bytes;
  uint32_t tx_ts = 0;  // unique per case: the DUT echoes it in ACK blocks
};

// One packet the DUT sent, decoded (the view points into *bytes).
struct Answer {
  std::shared_ptr<const std::vector<uint8_t>> bytes;
  wire::DecodeError error = wire::DecodeError::kNone;
  wire::PacketView view;
  bool withheld = false;  // a DUT data packet the suite treated as lost (start_sender's `withhold`)
  bool is_ack() const { return error == wire::DecodeError::kNone && view.opcode == wire::Opcode::kAck; }
  bool is_nak() const { return error == wire::DecodeError::kNone && view.opcode == wire::Opcode::kNak; }
};

// One RoCEv2 frame the DUT sent (§12), decoded (the view points into *frame).
struct RoceAnswer {
  std::shared_ptr<const std::vector<uint8_t>> frame;
  wire::DecodeError error = wire::DecodeError::kNone;  // kNone: Eth/IPv4/UDP, known opcode, TVer 0, ICRC intact
  wire::rocev2::PacketView view;
  uint8_t syndrome() const { return view.aeth ? view.aeth->syndrome : 0xFF; }
  bool is_aeth() const { return error == wire::DecodeError::kNone && view.opcode == wire::rocev2::Opcode::kAcknowledge; }
  bool is_ack() const { return is_aeth() && (syndrome() & 0xE0) == wire::rocev2::kSyndromeAck; }
  bool is_nak() const { return is_aeth() && (syndrome() & 0xE0) == (wire::rocev2::kSyndromeNakPsnSeqError & 0xE0); }
};

// An ACK block with the ACK that carried it.
struct AckSeen {
  const Answer* ack = nullptr;
  wire::AckBlock block{};
};

// "WRITE path 0 seq 3 floor 0 ..."; "undecodable (bad_checksum), 300 bytes".
std::string describe_packet(std::span<const uint8_t> packet);
// "RoCEv2 WRITE_ONLY qp 0x000101 psn 2 ACK_REQ ..."; "RoCEv2 ACKNOWLEDGE ... NAK PSN sequence error (0x60)".
std::string describe_rocev2(std::span<const uint8_t> frame);
// SACK bits as ranges of bit indices: "{0-2, 7}".
std::string sack_text(const uint8_t sack[32]);

class CaseContext {
 public:
  CaseContext(Dut& dut, const RunOptions& options, uint64_t case_seed, CaseResult& result);
  ~CaseContext();  // closes the case's connections and regions
  CaseContext(const CaseContext&) = delete;
  CaseContext& operator=(const CaseContext&) = delete;

  Dut& dut() { return dut_; }
  const RunOptions& options() const { return options_; }

  // Opens a connection at the DUT with a fresh suite-side id and the case's seed.
  const DutConnection& open(ConnectionRequest request = {});
  DutRegion register_region(uint64_t length, const std::vector<std::string>& access);

  // Packet templates on connection c (ids filled in; FIRST|LAST|ACK_REQ where
  // a one-packet message would carry them).
  Outgoing probe(const DutConnection& c, uint8_t path, uint32_t seq, uint32_t floor, uint16_t stream = 0) const;
  // Chunk `chunk` of WRITE message msg_seq of `len` bytes on `stream`, carrying
  // the Peer.Verify pattern of the message's slot (header word first), to the
  // slot in the target region. Flags: FIRST/LAST by offset, ACK_REQ on the last.
  Outgoing write_chunk(const DutConnection& c, uint16_t stream, uint32_t msg_seq, uint32_t len, uint32_t chunk,
                       uint8_t path, uint32_t seq, uint32_t floor) const;
  static std::vector<uint8_t> poison(size_t n) { return std::vector<uint8_t>(n, 0xD5); }
  // FETCH_ADD message msg_seq of `stream` adding `addend` to the stream's
  // atomic counter in the target region (Peer.Verify's layout: after the slots).
  Outgoing fetch_add(const DutConnection& c, uint16_t stream, uint32_t msg_seq, uint64_t addend, uint8_t path,
                     uint32_t seq, uint32_t floor) const;

  // READ_REQ message msg_seq of `stream` for `length` bytes at addr.
  Outgoing read_request(const DutConnection& c, uint16_t stream, uint32_t msg_seq, uint64_t addr, uint32_t length,
                        uint8_t path, uint32_t seq, uint32_t floor) const;

  // RoCEv2 (§12), on a connection opened with ConnectionRequest::rocev2: a
  // WRITE_ONLY of message msg_seq (its slot's Peer.Verify pattern with the
  // message header, or `payload` instead) at `psn`, as a whole frame on the
  // suite's RoCEv2 flow with its ICRC sealed.
  std::vector<uint8_t> rocev2_write(const DutConnection& c, uint32_t psn, uint32_t msg_seq, bool ack_req,
                                    const std::vector<uint8_t>* payload = nullptr) const;
  void send_rocev2(std::span<const uint8_t> frame, const std::string& note = "");
  // Reads the DUT's RoCEv2 frames until done() holds or the answer timeout
  // passes; then checks each for well-formedness: it decodes with its ICRC
  // intact and is an ACKNOWLEDGE to one of the case's QPs (a responder sends
  // nothing else). False on timeout.
  bool collect_rocev2_until(const std::function<bool()>& done);
  const std::vector<std::unique_ptr<RoceAnswer>>& rocev2_answers() const { return rocev2_answers_; }

  // From now on every data packet the DUT sends (responses, PROBEs) is
  // acknowledged at once, as a requester would (§6): the suite's ACKs carry
  // cum_seq/SACK of the DUT's paths and echo its tx_ts.
  void acknowledge_dut_data() { acknowledge_ = true; }
  Built build(const Outgoing& o);
  // Sends and records; returns the tx_ts the DUT must echo.
  uint32_t send(const Outgoing& o, wire::Ecn ecn = wire::Ecn::kEct0);
  void send_bytes(const Built& b, const std::string& note, wire::Ecn ecn = wire::Ecn::kEct0);

  // Reads answers until done() holds (checked after each) or the answer
  // timeout passes; then checks every answer for well-formedness. False on
  // timeout (the caller turns it into a failure naming what was awaited).
  bool collect_until(const std::function<bool()>& done);
  // The ACK block for `path` of connection c whose echo_ts is tx_ts, waiting
  // for it; fails the case ("expected ...") when none arrives.
  AckSeen await_ack(const DutConnection& c, uint8_t path, uint32_t tx_ts, const std::string& what);
  // The first NAK to tool id `tool_id` with this code... any code: waits for
  // one NAK naming (stream, msg_seq); fails the case when none arrives.
  const Answer& await_nak(uint32_t tool_id, uint16_t stream, uint32_t msg_seq, const std::string& what);

  // The DUT as the sender (requester): it connects to the suite and runs
  // `job` toward it (Dut::start_sender; the suite's id and target region are
  // filled in). The suite then plays the responder: it acknowledges every
  // data packet of the DUT on that connection at once (§6.4) with the path's
  // cum_seq and SACK (sliding to the DUT's path_floor, §6.2) and the stream's
  // receive watermark (§6.3, §11.7), except the packets `withhold` picks,
  // which it treats as lost on the fabric: neither recorded nor acknowledged.
  const SenderConnection& start_sender(SenderJob job, std::function<bool(const Answer&)> withhold);
  // Answers a READ_REQ of the DUT's job with READ_RESP packets on the suite's
  // path 0 (§5.3, §11.12), the bytes of the suite's target as the DUT's data
  // pattern has them (traffic.h: a READ target holds the slot pattern).
  void send_read_response(const SenderConnection& s, const Answer& request);
  // True once every message of the job is complete at the suite.
  bool sender_complete(const SenderConnection& s) const;
  // The stream's watermark as the suite computes it.
  uint32_t sender_watermark(const SenderConnection& s) const;
  // Waits for the job's end (bounded by the answer timeout) and records it.
  SenderOutcome finish_sender(const SenderConnection& s);
  // The DUT's data packets on connection s, in arrival order.
  std::vector<const Answer*> sender_packets(const SenderConnection& s) const;

  const std::vector<std::unique_ptr<Answer>>& answers() const { return answers_; }
  std::vector<const Answer*> naks() const;
  // Blocks for path of connection c in every ACK so far, in arrival order.
  std::vector<AckSeen> blocks(const DutConnection& c, uint8_t path) const;

  VerifyOutcome verify(const DutConnection& c, const std::string& operation, uint32_t message_bytes,
                       const std::vector<uint64_t>& stream_end);

  // Checks: throw CaseFailure("expected <what>; seen <seen>").
  void expect(bool ok, const std::string& expected, const std::string& seen);
  // cum_seq and every SACK bit of a block against the expected set bits.
  void expect_block(const AckSeen& a, uint32_t cum, const std::vector<uint32_t>& bits, const std::string& when);
  void expect_no_nak(const std::string& when);

  void note_sent(std::string line) { result_.sent.push_back(std::move(line)); }
  void note_seen(std::string line) { result_.seen.push_back(std::move(line)); }

 private:
  static Outgoing header(const DutConnection& c, wire::Opcode op, uint8_t flags, uint16_t stream, uint32_t msg_seq,
                         uint8_t path, uint32_t seq, uint32_t floor);
  void record(bool from_dut, std::span<const uint8_t> packet, wire::Ecn ecn, std::string comment,
              bool whole_frame = false);
  void check_well_formed(const Answer& a);
  void acknowledge(const Answer& a);
  bool owns_tool_id(uint32_t id) const;
  struct Sender;
  Sender* sender_of(const Answer& a);
  void receive_from_sender(Sender& s, Answer& a);
  void send_ack(uint32_t dst, uint32_t src, uint8_t path, uint16_t stream, uint32_t watermark, uint32_t cum,
                uint32_t echo, const std::set<uint32_t>& got, const std::string& note);

  Dut& dut_;
  RunOptions options_;
  uint64_t seed_;
  CaseResult& result_;
  uint32_t next_ts_ = 1;
  std::vector<std::unique_ptr<DutConnection>> conns_;
  std::vector<uint32_t> regions_;
  std::vector<std::unique_ptr<Answer>> answers_;
  size_t checked_ = 0;  // answers already checked for well-formedness
  std::vector<std::unique_ptr<RoceAnswer>> rocev2_answers_;
  size_t rocev2_checked_ = 0;
  bool acknowledge_ = false;
  // Per DUT path: the seqs received from the DUT (for the suite's own ACKs).
  std::map<uint8_t, std::set<uint32_t>> dut_seqs_;
  // The suite as the responder of a DUT's job.
  struct Sender {
    SenderConnection conn;
    std::function<bool(const Answer&)> withhold;
    std::map<uint8_t, std::set<uint32_t>> seqs;           // per path: seqs recorded
    std::map<uint32_t, std::set<uint32_t>> chunks;        // per message above the watermark: offsets received
    std::map<uint32_t, uint32_t> lengths;                 // per message: msg_len
    uint32_t watermark = 0;
    uint32_t response_seq = 0;  // the suite's own path 0 sequence (its READ responses)
    bool finished = false;
  };
  std::vector<std::unique_ptr<Sender>> senders_;
};

// The data pattern of Peer.Verify (daemon/include/metaroce/daemon/traffic.h):
// every 8-byte word w of slot k holds pattern_word(seed, k, w), stored low byte
// first; a WRITE message's word 0 is its header (stream << 48 | index).
uint64_t pattern_word(uint64_t seed, uint64_t slot, uint64_t word);
inline uint64_t message_header(uint32_t stream, uint64_t index) { return (uint64_t{stream} << 48) | index; }

}  // namespace metaroce::conformance
