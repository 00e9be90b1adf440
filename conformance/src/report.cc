// Table, JSON and JUnit XML renderings of a conformance run.
#include "metaroce/conformance/report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace metaroce::conformance {
namespace {

// Width in characters: UTF-8 continuation bytes ('§' is two bytes) take no column.
size_t columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
}
std::string pad(const std::string& s, size_t width) {
  const size_t w = columns(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no other control characters than tab, CR and LF.
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') out += '?';
        else out += static_cast<char>(ch);
    }
  }
  return out;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

std::string transcript(const CaseResult& r) {
  std::string s;
  for (const auto& line : r.sent) s += "sent: " + line + "\n";
  for (const auto& line : r.seen) s += "seen: " + line + "\n";
  if (!r.pcap.empty()) s += "pcap: " + r.pcap + "\n";
  return s;
}

}  // namespace

size_t RunSummary::passed() const {
  return static_cast<size_t>(std::count_if(results.begin(), results.end(), [](const CaseResult& r) { return r.passed; }));
}

std::string render_table(const RunSummary& run) {
  size_t id_w = 4, spec_w = 4;
  for (const auto& r : run.results) {
    id_w = std::max(id_w, columns(r.info->id));
    spec_w = std::max(spec_w, columns(r.info->spec));
  }
  std::string out = "conformance of " + run.dut + "\n\n";
  out += pad("CASE", id_w) + "  " + pad("SPEC", spec_w) + "  RESULT\n";
  for (const auto& r : run.results) {
    out += pad(r.info->id, id_w) + "  " + pad(r.info->spec, spec_w) + "  " + (r.passed ? "PASS" : "FAIL") + "\n";
    if (r.passed) continue;
    out += "    " + r.failure + "\n";
    if (!r.pcap.empty()) out += "    pcap: " + r.pcap + "\n";
    for (const auto& line : r.sent) out += "      sent: " + line + "\n";
    for (const auto& line : r.seen) out += "      seen: " + line + "\n";
  }
  out += "\n" + std::to_string(run.passed()) + " of " + std::to_string(run.results.size()) + " cases passed";
  if (run.failed()) out += ", " + std::to_string(run.failed()) + " failed";
  return out + "\n";
}

std::string render_json(const RunSummary& run) {
  nlohmann::json j;
  j["target"] = run.target;
  j["dut"] = run.dut;
  j["passed"] = run.passed();
  j["failed"] = run.failed();
  j["cases"] = nlohmann::json::array();
  for (const auto& r : run.results) {
    nlohmann::json c;
    c["id"] = r.info->id;
    c["spec"] = r.info->spec;
    c["title"] = r.info->title;
    c["sends"] = r.info->sends;
    c["expects"] = r.info->expects;
    c["result"] = r.passed ? "PASS" : "FAIL";
    c["seconds"] = r.seconds;
    c["failure"] = r.failure;
    c["pcap"] = r.pcap;
    c["sent"] = r.sent;
    c["seen"] = r.seen;
    j["cases"].push_back(std::move(c));
  }
  // Replace invalid UTF-8 rather than throw: DUT-provided text ends up here.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string render_junit(const RunSummary& run) {
  double total = 0;
  for (const auto& r : run.results) total += r.seconds;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"metaroce-conformance\" tests=\"" + std::to_string(run.results.size()) + "\" failures=\"" +
         std::to_string(run.failed()) + "\" errors=\"0\" time=\"" + seconds_text(total) + "\">\n";
  out += "  <testsuite name=\"metaroce-conformance\" tests=\"" + std::to_string(run.results.size()) + "\" failures=\"" +
         std::to_string(run.failed()) + "\" errors=\"0\" skipped=\"0\" time=\"" + seconds_text(total) + "\">\n";
  out += "    <properties>\n      <property name=\"target\" value=\"" + xml_escape(run.target) +
         "\"/>\n      <property name=\"dut\" value=\"" + xml_escape(run.dut) + "\"/>\n    </properties>\n";
  for (const auto& r : run.results) {
    const std::string& id = r.info->id;
    const std::string group = id.substr(0, id.find('.'));
    out += "    <testcase classname=\"conformance." + xml_escape(group) + "\" name=\"" + xml_escape(id) + "\" time=\"" +
           seconds_text(r.seconds) + "\">\n";
    out += "      <properties><property name=\"spec\" value=\"" + xml_escape(r.info->spec) + "\"/></properties>\n";
    if (!r.passed)
      out += "      <failure message=\"" + xml_escape(r.failure) + "\" type=\"nonconformance\">" +
             xml_escape(r.info->spec + ": " + r.failure + "\n" + transcript(r)) + "</failure>\n";
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace metaroce::conformance
