// The conformance catalogue and its runner.
//
// Every case has an id ("sack.gaps"), the spec section it checks
// (docs/spec/metaroce-wire-v1.md), what it sends and what it expects. A case
// opens its own connection(s) at the DUT, sends packets it builds itself, reads
// the DUT's answers up to a fence (a packet with ACK_REQ whose tx_ts the DUT
// must echo: everything the DUT answered before that echo is in hand, with no
// sleeping), checks them field by field, and inspects the DUT's memory through
// the control API. A failure says what was expected and what was seen, and the
// result carries the packets sent and seen.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "metaroce/conformance/dut.h"

namespace metaroce::conformance {

class CaseContext;

struct CaseInfo {
  std::string id;        // "group.name": [a-z0-9.-]
  std::string spec;      // sections of docs/spec/metaroce-wire-v1.md, e.g. "§6.2, §11.3"
  std::string title;     // one line
  std::string sends;     // what the case sends
  std::string expects;   // what the DUT must do
  void (*run)(CaseContext&) = nullptr;
};

// Every case, in catalogue order.
const std::vector<CaseInfo>& catalogue();

// Cases whose id matches one of the comma-separated globs in `patterns` ('*'
// any run of characters, '?' one character), in catalogue order. Empty
// patterns select every case. On a bad pattern returns {} and sets *error
// naming the flag `flag` and what is allowed.
std::vector<const CaseInfo*> select_cases(std::string_view patterns, std::string_view flag, std::string* error);
bool glob_match(std::string_view pattern, std::string_view text);

// One packet of a case as it crossed the wire (a UDP payload, or a RoCEv2
// frame), for its pcap.
struct CaseFrame {
  uint64_t time_ns = 0;  // wall clock (Unix epoch)
  bool from_dut = false;
  wire::Ecn ecn = wire::Ecn::kNotEct;
  std::vector<uint8_t> packet;
  bool whole_frame = false;  // packet is a whole Eth/IPv4/UDP frame (RoCEv2, whose ICRC covers its headers)
  std::string comment;   // "sent: ..." / "seen: ..."
};

struct CaseResult {
  const CaseInfo* info = nullptr;
  bool passed = false;
  std::string failure;            // expected vs seen, "" when passed
  std::vector<std::string> sent;  // packets and control calls, one line each
  std::vector<std::string> seen;  // the DUT's packets and answers, one line each
  std::vector<CaseFrame> frames;  // every packet sent and seen, in order
  std::string pcap;               // file the frames were written to ("" = none)
  double seconds = 0;
};

struct RunOptions {
  // Bound on waiting for an answer the DUT must send (a fence's ACK, a NAK).
  // Only a failing DUT ever waits this long.
  std::chrono::milliseconds answer_timeout{2000};
  uint64_t seed = 1;  // connection ids and data patterns
};

std::vector<CaseResult> run_cases(Dut& dut, const std::vector<const CaseInfo*>& cases, const RunOptions& options);

}  // namespace metaroce::conformance
