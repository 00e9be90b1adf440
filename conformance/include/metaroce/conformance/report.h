// Results of a conformance run as a table (people), JSON (scripts) and JUnit
// XML (CI systems). Every case carries its spec reference; a failed one what
// was expected and seen, and the packets and control calls of the case.
#pragma once

#include <string>
#include <vector>

#include "metaroce/conformance/suite.h"

namespace metaroce::conformance {

struct RunSummary {
  std::string target;  // as given (--target)
  std::string dut;     // Dut::describe()
  wire::UdpFlow flow;  // Dut::flow_to_dut(): how the pcaps frame the packets
  std::vector<CaseResult> results;
  size_t passed() const;
  size_t failed() const { return results.size() - passed(); }
};

// Columns: case, spec, result; under a failed case its failure, then the
// packets sent and seen, indented.
std::string render_table(const RunSummary& run);
// {"target", "dut", "passed", "failed", "cases": [{"id", "spec", "title",
//  "result": "PASS"|"FAIL", "seconds", "failure", "sent": [...], "seen": [...]}]}
std::string render_json(const RunSummary& run);
// <testsuites><testsuite name="metaroce-conformance" ...><testcase
// classname="conformance.<group>" name="<id>">, the spec reference as a
// property, <failure message=...> with the transcript as its text.
std::string render_junit(const RunSummary& run);

// Writes <dir>/<case id>.pcapng for every failed case (its packets framed in
// Ethernet/IPv4/UDP between the suite's and the DUT's addresses, RoCEv2 frames
// as they were, each with a comment: what was sent or seen) and sets
// CaseResult::pcap. Creates dir.
// False with *error ("--pcap-dir: ...") when a file cannot be written.
bool write_failure_pcaps(RunSummary& run, const std::string& dir, std::string* error);

}  // namespace metaroce::conformance
