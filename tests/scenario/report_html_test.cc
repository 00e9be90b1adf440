// report.html as a user sees it: written by write_report, rendered by Debian's
// headless Chromium (--dump-dom and --screenshot). The rendered DOM must have
// the four plots with real content, every data-key element must show
// format_number() of the value its JSON pointer names in report.json, no
// markup from the report's text may turn into elements, and the screenshot
// must show a page (PNG > 20 KB). The pages and screenshots stay in
// report_html_out/ under the test's working directory, to look at.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "metaroce/scenario/report.h"

namespace metaroce::scenario::testing {
Report make_sweep_report(const std::string& rocev2_name);  // report_test.cc
Report make_fault_report();                                  // report_test.cc
}  // namespace metaroce::scenario::testing

namespace {

namespace ms = metaroce::scenario;
namespace fs = std::filesystem;

constexpr const char* kChromium = "/usr/bin/chromium";

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Chromium {
  fs::path profile;
  Chromium() {
    std::string tmpl = (fs::temp_directory_path() / "report_html_chromium_XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) profile = tmpl;
  }
  ~Chromium() {
    std::error_code ec;
    if (!profile.empty()) fs::remove_all(profile, ec);
  }
  // Runs chromium with the flags a user would, plus extra; stdout to out, stderr to log.
  int run(const std::string& extra, const fs::path& out, const fs::path& log) const {
    const std::string cmd = std::string("timeout 60 ") + kChromium +
                            " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                            " --disable-background-networking --disable-component-update --disable-sync"
                            " --disable-dev-shm-usage --hide-scrollbars --user-data-dir=" +
                            quote(profile.string()) + " " + extra + " > " + quote(out.string()) + " 2> " +
                            quote(log.string());
    return std::system(cmd.c_str());
  }
};

std::string html_unescape(std::string s) {
  const std::pair<const char*, const char*> ents[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&nbsp;", " "}, {"&amp;", "&"}};
  for (const auto& [from, to] : ents)
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + 1)) s.replace(p, std::strlen(from), to);
  return s;
}

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + needle.size())) ++n;
  return n;
}

// The serialized <svg id="ID" ...>...</svg> of the rendered DOM ("" if absent).
std::string svg_of(const std::string& dom, const std::string& id) {
  const size_t idp = dom.find("id=\"" + id + "\"");
  if (idp == std::string::npos) return {};
  const size_t open = dom.rfind("<svg", idp);
  const size_t close = dom.find("</svg>", idp);
  if (open == std::string::npos || close == std::string::npos) return {};
  return dom.substr(open, close + 6 - open);
}

// Writes the report, renders it twice (DOM, screenshot) and checks what a user sees.
void render_and_check(const ms::Report& r, const std::string& name, const std::vector<std::string>& plots) {
  if (!fs::exists(kChromium)) GTEST_SKIP() << "SKIPPED: needs Debian's chromium (apt-get install chromium)";
  const fs::path dir = fs::absolute(fs::path("report_html_out") / name);
  std::error_code ec;
  fs::remove_all(dir, ec);
  std::string err;
  ASSERT_TRUE(ms::write_report(r, dir.string(), &err)) << err;
  const fs::path page = dir / "report.html";
  const std::string url = "file://" + page.string();

  Chromium chromium;
  ASSERT_FALSE(chromium.profile.empty());
  const fs::path dom_file = dir / "dom.html", png = dir / "screenshot.png";
  const int rc = chromium.run("--dump-dom " + quote(url), dom_file, dir / "chromium-dom.log");
  ASSERT_EQ(rc, 0) << "chromium --dump-dom failed; see " << (dir / "chromium-dom.log");
  const std::string dom = slurp(dom_file);
  ASSERT_GT(dom.size(), 10000u) << dom.substr(0, 500);

  // The four plots, each with drawn content.
  for (const auto& id : plots) {
    const std::string svg = svg_of(dom, id);
    ASSERT_FALSE(svg.empty()) << "no <svg id=\"" << id << "\"> in the rendered page";
    EXPECT_NE(svg.find("role=\"img\""), std::string::npos) << id;
    EXPECT_NE(svg.find("aria-label=\""), std::string::npos) << id;
    const size_t marks = count(svg, "<polyline") + count(svg, "<path") + count(svg, "<rect") + count(svg, "<circle");
    EXPECT_GE(marks, 3u) << id << " looks empty";
    EXPECT_GE(count(svg, "<text"), 8u) << id << " has no axis labels";
  }
  const std::string goodput = svg_of(dom, "plot-goodput");
  EXPECT_GE(count(goodput, "<polyline"), r.runs.size()) << "one line per run";
  EXPECT_NE(goodput.find("stroke-dasharray"), std::string::npos) << "fault events";
  EXPECT_NE(goodput.find("time (s)"), std::string::npos);
  EXPECT_NE(goodput.find("goodput (Gb/s)"), std::string::npos);
  size_t cells = 0;
  for (const auto& run : r.runs)
    for (const auto& iv : run.intervals) cells += iv.plane_utilisation.size();
  EXPECT_GE(count(svg_of(dom, "plot-planes"), "<rect"), cells);
  size_t with_samples = 0;
  std::set<std::string> jobs;
  for (const auto& run : r.runs) {
    with_samples += run.latency.samples > 0 ? 1 : 0;
    jobs.insert(run.job);
  }
  const std::string latency = svg_of(dom, "plot-latency");
  EXPECT_GE(count(latency, "<rect"), 3 * with_samples) << "median/p99/p99.9 bars per run";
  EXPECT_NE(latency.find("latency (us, log scale)"), std::string::npos);
  if (const std::string retained = svg_of(dom, "plot-retained"); !retained.empty()) {
    EXPECT_GE(count(retained, "<polyline"), jobs.size()) << "one curve per job";
    EXPECT_GE(count(retained, "<circle"), r.runs.size()) << "one point per run";
    EXPECT_NE(retained.find("retained goodput (%)"), std::string::npos);
  }
  if (const std::string bars = svg_of(dom, "plot-goodput-bars"); !bars.empty()) {
    EXPECT_GE(count(bars, "<rect"), r.runs.size()) << "one bar per run";
  }

  // Text from the report never becomes markup.
  EXPECT_EQ(dom.find("<script"), std::string::npos);
  EXPECT_NE(dom.find("<details>"), std::string::npos);

  // Every data-key shows format_number(last key, value at the pointer).
  const auto j = nlohmann::json::parse(slurp(dir / "report.json"));
  const std::string attr = "data-key=\"";
  size_t checked = 0;
  for (size_t p = dom.find(attr); p != std::string::npos; p = dom.find(attr, p + 1)) {
    const size_t b = p + attr.size(), e = dom.find('"', b);
    const std::string pointer = html_unescape(dom.substr(b, e - b));
    const size_t gt = dom.find('>', e), lt = dom.find('<', gt);
    ASSERT_NE(lt, std::string::npos);
    const std::string text = html_unescape(dom.substr(gt + 1, lt - gt - 1));
    const nlohmann::json::json_pointer ptr(pointer);
    ASSERT_TRUE(j.contains(ptr)) << pointer << " is not in report.json";
    ASSERT_TRUE(j.at(ptr).is_number()) << pointer;
    EXPECT_EQ(text, ms::format_number(pointer.substr(pointer.rfind('/') + 1), j.at(ptr).get<double>())) << pointer;
    ++checked;
  }
  EXPECT_GE(checked, 5 * r.runs.size()) << "too few data-key numbers";

  // Screenshot as a user would see the top of the page.
  const int src = chromium.run("--screenshot=" + quote(png.string()) + " --window-size=1280,2400 " + quote(url),
                               dir / "chromium-screenshot.out", dir / "chromium-screenshot.log");
  ASSERT_EQ(src, 0) << "chromium --screenshot failed; see " << (dir / "chromium-screenshot.log");
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 20u * 1024u) << png;
  std::printf("report: %s\nscreenshot: %s\n", page.c_str(), png.c_str());
}

TEST(ReportHtmlChromium, SweepReportRenders) {
  render_and_check(metaroce::scenario::testing::make_sweep_report("rocev2"), "sweep",
                   {"plot-goodput", "plot-retained", "plot-planes", "plot-latency"});
}

TEST(ReportHtmlChromium, FaultReportRenders) {
  render_and_check(metaroce::scenario::testing::make_fault_report(), "fault",
                   {"plot-goodput", "plot-goodput-bars", "plot-planes", "plot-latency"});
}

}  // namespace
