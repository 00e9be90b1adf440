// The terminal summary (summary_table): one aligned row per run, numbers
// formatted as on the page, then the assertions with PASS/FAIL.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "metaroce/scenario/report.h"
#include "report_internal.h"

namespace metaroce::scenario {

using namespace report_internal;

std::string summary_table(const Report& r) {
  const Derived d = derive(r);
  std::vector<std::string> head = {"run", "transport"};
  if (d.sweep) head.push_back(d.parameter);
  head.push_back("goodput");
  if (d.sweep) head.push_back("retained");
  for (const char* c : {"retransmits", "spurious", "RTOs", "path changes", "verification", "state"}) head.push_back(c);
  // Numbers right-aligned; run, transport, verification and state left-aligned.
  std::vector<bool> right(head.size(), true);
  right[0] = right[1] = right[head.size() - 2] = right[head.size() - 1] = false;
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const auto& run = r.runs[i];
    std::vector<std::string> row = {run.job, transport_name(run.transport)};
    if (d.sweep) row.push_back(sweep_label(run.sweep_parameter, run.sweep_value));
    row.push_back(format_number("goodput_bps", run.goodput_bps));
    if (d.sweep) row.push_back(d.runs[i].retained ? format_number("retained", *d.runs[i].retained) : "-");
    row.push_back(format_number("retransmits", static_cast<double>(run.retransmits)));
    row.push_back(format_number("spurious_retransmits", static_cast<double>(run.spurious_retransmits)));
    row.push_back(format_number("rtos", static_cast<double>(run.rtos)));
    row.push_back(format_number("path_state_changes", static_cast<double>(run.path_state_changes)));
    std::string v = run.verification.empty() ? "not verified" : run.verification;
    if (v.size() > 40) v = v.substr(0, 37) + "...";
    row.push_back(v);
    row.push_back(run.state + (run.error.empty() ? "" : ": " + run.error));
    rows.push_back(std::move(row));
  }
  std::vector<size_t> w(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    w[c] = head[c].size();
    for (const auto& row : rows) w[c] = std::max(w[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string s;
    for (size_t c = 0; c < row.size(); ++c) {
      const bool last = c + 1 == row.size();
      const std::string pad(w[c] - std::min(w[c], row[c].size()), ' ');
      s += right[c] ? pad + row[c] : row[c] + (last ? "" : pad);
      if (!last) s += "  ";
    }
    return s + "\n";
  };
  std::string out = line(head);
  size_t total = 0;
  for (size_t c = 0; c < w.size(); ++c) total += w[c] + (c + 1 < w.size() ? 2 : 0);
  out += std::string(total, '-') + "\n";
  for (const auto& row : rows) out += line(row);
  // The answer first: did each transport degrade or stop?
  std::string answers;
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const std::string text = outcome_text(r.runs[i], d.runs[i]);
    if (!text.empty()) answers += "  " + run_label(r.runs[i]) + " (" + transport_name(r.runs[i].transport) + "): " + text + "\n";
  }
  if (!answers.empty()) out += "\ndegrade or stop?\n" + answers;
  if (!r.faithful()) {
    out += "\nINCONCLUSIVE: this host's datapath, not the emulated fabric, limited the run:\n";
    std::vector<std::string> seen;
    for (const auto& run : r.runs)
      for (const auto& p : run.fidelity.problems)
        if (std::find(seen.begin(), seen.end(), p) == seen.end()) {
          seen.push_back(p);
          out += "  " + p + "\n";
        }
  }
  if (!r.captures.empty()) {
    out += "\ncaptures:\n";
    for (const CaptureResult& c : r.captures)
      out += "  run " + std::to_string(c.run) + " " + c.event + " [" + strf("%.3f", c.from_s) + ", " + strf("%.3f", c.to_s) +
             "] s: " +
             (c.file.empty() ? std::string("no file")
                             : c.file + ", " + std::to_string(c.frames) + " frames, " + std::to_string(c.frames_not_written) +
                                   " not written") +
             (c.note.empty() ? "" : " (" + c.note + ")") + "\n";
  }
  if (r.assertions.empty()) {
    out += "\nno assertions\n";
  } else {
    const size_t known = r.known_failures();
    out += "\nassertions: " + std::to_string(r.assertions.size() - d.failed - r.unresolved() - known) + " of " +
           std::to_string(r.assertions.size()) + " passed" +
           (r.unresolved() ? ", " + std::to_string(r.unresolved()) + " too close to call" : std::string()) +
           (known ? ", " + std::to_string(known) + " failed on a known issue" : std::string()) + "\n";
    for (const auto& a : r.assertions) {
      out += std::string(a.passed ? "  PASS  " : a.inconclusive ? "  CLOSE " : a.known_failure() ? "  KNOWN " : "  FAIL  ") +
             a.text + (a.detail.empty() ? "" : "  (" + a.detail + ")") + "\n";
      if (a.known_failure()) out += "        known issue: " + a.known_issue + "\n";
      else if (a.passed && !a.known_issue.empty())
        out += "        passes despite its known_issue marker: the issue may be gone (remove the marker)\n";
    }
  }
  return out;
}

}  // namespace metaroce::scenario
