// report.html as a user sees it: written by write_report, rendered by Debian's
// headless Chromium (--dump-dom and --screenshot). Every data-key element must
// show format_number() of the value its JSON pointer names in report.json, no
// markup from the report's text may turn into elements, and the screenshot
// must show a page (PNG > 20 KB). The plots: a copy of the page with a probe
// script appended reads each Chart.js chart back (its parsed values and where
// it drew them); every plotted value must equal its report.json number in
// the plot's unit, be drawn at that value's pixel, and every number the plots
// should show must be there (a completion-time CDF's value is its x, its y
// the share the point stands for); the time zoom (a typed range, reset, a drag)
// must apply to every time plot. The pages and screenshots stay in
// report_html_out/ under the test's working directory, to look at.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
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
#include "report_fixtures.h"

namespace {

using namespace metaroce::scenario::testing;  // report_fixtures.h

namespace ms = metaroce::scenario;
namespace fs = std::filesystem;

constexpr const char* kChromium = "/usr/bin/chromium";

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

// Appended to a copy of report.html: reads every chart back from Chart.js
// (Chart.getChart) and writes what it holds into <pre id="probe">, for
// --dump-dom. Per plotted point: its JSON pointer, the value Chart.js parsed,
// how the spec derives it from report.json, and how far (px) the drawn
// element is from the pixel of that value on the value axis (and, on time
// plots, how far the end of the interval's step is from its place). Then the time
// zoom: the x range of every time plot after typing 0.5 to 1.5 s into the
// first zoom inputs, after "reset zoom", and after a drag from 0.5 to 1.5 s.
constexpr const char* kProbe = R"JS(<script>
(function () {
  var specs = {};
  JSON.parse(document.getElementById("report-plots").textContent).forEach(function (s) { specs[s.canvas] = s; });
  var out = [];
  document.querySelectorAll("figure.plot canvas").forEach(function (cv) {
    var ch = Chart.getChart(cv), c = { figure: cv.closest("figure").id, canvas: cv.id, drawn: !!ch };
    out.push(c);
    if (!ch) return;
    var cdf = specs[cv.id].kind === "cdf", axis = cdf || ch.options.indexAxis === "y" ? "x" : "y";
    c.type = ch.config.type;
    c.x_title = ch.options.scales.x.title.text;
    c.y_title = ch.options.scales.y.title.text;
    c.value_scale = ch.scales[axis].type;
    c.events = (specs[cv.id].events || []).length;
    c.points = [];
    ch.data.datasets.forEach(function (ds, k) {
      var meta = ch.getDatasetMeta(k), from = specs[cv.id].datasets[k].from_json;
      ds.data.forEach(function (raw, n) {
        if (raw.p === undefined) return;
        var v = meta.controller.getParsed(n)[axis], el = meta.data[n], at = ch.scales[axis].getPixelForValue(v);
        var pt = { p: raw.p, v: v, from_json: from, off_px: Math.abs(at - el[axis]) };
        if (cdf) {
          pt.share = meta.controller.getParsed(n).y;
          pt.share_off_px = Math.abs(ch.scales.y.getPixelForValue(pt.share) - el.y);
        }
        if (specs[cv.id].time && !raw.end) {
          // The interval's step: a straight line (no stepping, no curve) to
          // the next point, drawn at the interval's end and the same value.
          var next = meta.data[n + 1], o = meta.dataset.options, straight = !o.stepped && !o.tension;
          pt.step_off_px = straight && next && ds.data[n + 1].end
              ? Math.max(Math.abs(next.y - at), Math.abs(next.x - ch.scales.x.getPixelForValue(raw.t1))) : null;
        }
        c.points.push(pt);
      });
    });
    // Values on hover: the tooltip Chart.js shows over the first plotted point.
    var k0 = -1, n0 = -1;
    ch.data.datasets.forEach(function (ds, k) {
      if (k0 < 0) ds.data.forEach(function (raw, n) { if (n0 < 0 && raw.p !== undefined) { k0 = k; n0 = n; } });
    });
    var el0 = ch.getDatasetMeta(k0).data[n0];
    ch.tooltip.setActiveElements([{ datasetIndex: k0, index: n0 }], { x: el0.x, y: el0.y });
    c.tooltip = [].concat(ch.tooltip.title || []).concat(ch.tooltip.body.map(function (b) { return b.lines.join(" "); }));
    c.legend = ch.legend.legendItems.length;
  });
  function ranges() {
    var r = [];
    document.querySelectorAll("figure.plot canvas").forEach(function (cv) {
      var ch = Chart.getChart(cv);
      if (ch && specs[cv.id].time) r.push([ch.scales.x.min, ch.scales.x.max]);
    });
    return r;
  }
  var zoom = { before: ranges() }, from = document.querySelector(".zoom-from"), to = document.querySelector(".zoom-to");
  if (from && to) {
    from.value = "0.5";
    to.value = "1.5";
    from.dispatchEvent(new Event("change"));
    zoom.zoomed = ranges();
    document.querySelector(".zoom-reset").click();
    zoom.reset = ranges();
  }
  // A drag from 0.5 s to 1.5 s across the first time plot, handed to the
  // page's plugins as Chart.js hands them mouse events.
  var first = null;
  document.querySelectorAll("figure.plot canvas").forEach(function (cv) {
    var ch = Chart.getChart(cv);
    if (!first && ch && specs[cv.id].time) first = ch;
  });
  if (first) {
    var area = first.chartArea, xs = first.scales.x, y = (area.top + area.bottom) / 2;
    ["mousedown", "mousemove", "mouseup"].forEach(function (type, k) {
      first.notifyPlugins("afterEvent", { event: { type: type, x: xs.getPixelForValue(k ? 1.5 : 0.5), y: y } });
    });
    zoom.dragged = ranges();
    document.querySelector(".zoom-reset").click();
  }
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify({ charts: out, zoom: zoom });
  document.body.appendChild(pre);
})();
</script>
)JS";

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

  // Text from the report never becomes markup: the only scripts are the
  // page's three (Chart.js, the plot specs, report_charts.js).
  EXPECT_EQ(count(dom, "<script"), 3u);
  EXPECT_NE(dom.find("<details>"), std::string::npos);
  for (const auto& id : plots)
    EXPECT_NE(dom.find("<figure class=\"plot\" id=\"" + id + "\""), std::string::npos) << id << " missing";
  EXPECT_NE(dom.find("<ol class=\"events\"><li>plane 1 down"), std::string::npos) << "the key to the fault events";
  if (r.mode == "live") {  // no completion-time distribution: the CDF plot says why
    EXPECT_NE(dom.find("no completion-time distribution: live daemons report percentiles only"), std::string::npos);
  }

  // The plots, read back from Chart.js.
  const auto j = nlohmann::json::parse(slurp(dir / "report.json"));
  const fs::path probe_page = dir / "probe.html", probe_dom = dir / "probe-dom.html";
  {
    std::string html = slurp(page);
    const size_t body_end = html.rfind("</body>");
    ASSERT_NE(body_end, std::string::npos);
    html.insert(body_end, kProbe);
    std::ofstream(probe_page, std::ios::binary) << html;
  }
  ASSERT_EQ(chromium.run("--dump-dom " + quote("file://" + probe_page.string()), probe_dom, dir / "chromium-probe.log"), 0)
      << "chromium --dump-dom failed; see " << (dir / "chromium-probe.log");
  const std::string pdom = slurp(probe_dom);
  const size_t pre = pdom.find("<pre id=\"probe\">");
  ASSERT_NE(pre, std::string::npos) << "the probe did not run (a script error?); see " << (dir / "chromium-probe.log");
  const size_t pre_b = pre + std::strlen("<pre id=\"probe\">");
  const auto probe = nlohmann::json::parse(html_unescape(pdom.substr(pre_b, pdom.find("</pre>", pre_b) - pre_b)));
  const auto& charts = probe.at("charts");
  std::set<std::string> drawn_plots, plotted;
  size_t points = 0, steps = 0;
  for (const auto& c : charts) {
    const std::string fig = c.at("figure"), canvas = c.at("canvas");
    ASSERT_TRUE(c.at("drawn").get<bool>()) << canvas << ": no Chart.js chart on this canvas";
    ASSERT_FALSE(c.at("points").empty()) << canvas << " plots nothing";
    drawn_plots.insert(fig);
    EXPECT_GE(c.at("legend").get<size_t>(), 1u) << canvas << ": a legend to toggle series";
    std::string tooltip;
    for (const auto& line : c.at("tooltip")) tooltip += line.get<std::string>() + "\n";
    const bool latency = fig == "plot-latency" || fig == "plot-latency-cdf";
    EXPECT_NE(tooltip.find(latency ? " us" : fig == "plot-retained" || fig == "plot-planes" ? " %" : " Gb/s"),
              std::string::npos)
        << canvas << ": hovering shows no value with its unit:\n" << tooltip;
    if (fig == "plot-goodput" || fig == "plot-planes") {
      EXPECT_NE(tooltip.find("t = "), std::string::npos) << canvas << ": hovering shows no interval:\n" << tooltip;
    }
    if (fig == "plot-goodput") {
      EXPECT_EQ(c.at("x_title"), "time (s)") << canvas;
      EXPECT_EQ(c.at("y_title"), "goodput (Gb/s)") << canvas;
      EXPECT_GE(c.at("events").get<size_t>(), 1u) << canvas << ": fault events marked";
    }
    if (fig == "plot-planes") { EXPECT_EQ(c.at("x_title"), "time (s)") << canvas; }
    if (fig == "plot-latency") {
      EXPECT_EQ(c.at("y_title"), "latency (us, log scale)");
      EXPECT_EQ(c.at("value_scale"), "logarithmic");
    }
    if (fig == "plot-latency-cdf") {
      EXPECT_EQ(c.at("type"), "line") << canvas << ": a curve per run";
      EXPECT_EQ(c.at("x_title"), "message completion time (us, log scale)");
      EXPECT_EQ(c.at("y_title"), "fraction of messages completed");
      EXPECT_EQ(c.at("value_scale"), "logarithmic");
      EXPECT_EQ(tooltip.rfind("p0 (min)\n", 0), 0u) << canvas << ": hovering names the percentile:\n" << tooltip;
      // ... and the time at it (the first plotted point's), as report_charts.js's fmt() writes it.
      const double v0 = c.at("points").at(0).at("v").get<double>();
      char shown[40];
      std::snprintf(shown, sizeof shown, v0 >= 1000 ? "%.0f" : "%#.4g", v0);
      EXPECT_NE(tooltip.find(std::string(": ") + shown + " us\n"), std::string::npos)
          << canvas << ": hovering shows the time " << shown << ":\n" << tooltip;
    }
    if (fig == "plot-retained") { EXPECT_EQ(c.at("y_title"), "retained goodput (%)"); }
    if (fig == "plot-goodput-bars") { EXPECT_EQ(c.at("x_title"), "goodput (Gb/s)"); }
    for (const auto& pt : c.at("points")) {
      const std::string pointer = pt.at("p");
      const nlohmann::json::json_pointer ptr(pointer);
      ASSERT_TRUE(j.contains(ptr)) << pointer << " is not in report.json";
      ASSERT_TRUE(j.at(ptr).is_number()) << pointer;
      double want = j.at(ptr).get<double>();
      const auto& from = pt.at("from_json");
      if (from.contains("div")) want /= from.at("div").get<double>();
      if (from.contains("mul")) want *= from.at("mul").get<double>();
      ASSERT_TRUE(pt.at("v").is_number()) << canvas << " " << pointer << ": Chart.js did not parse it";
      EXPECT_EQ(pt.at("v").get<double>(), want) << canvas << " " << pointer;
      EXPECT_LT(pt.at("off_px").get<double>(), 1.0) << canvas << " " << pointer << ": not drawn at its value";
      if (fig == "plot-latency-cdf") {
        const double k = std::stod(pointer.substr(pointer.rfind('/') + 1));
        EXPECT_EQ(pt.at("share").get<double>(), k / (ms::kLatencyCdfPoints - 1)) << canvas << " " << pointer;
        EXPECT_LT(pt.at("share_off_px").get<double>(), 1.0) << canvas << " " << pointer << ": not drawn at its share";
      }
      if (pt.contains("step_off_px")) {
        ASSERT_TRUE(pt.at("step_off_px").is_number()) << canvas << " " << pointer << ": no straight step to the interval's end";
        EXPECT_LT(pt.at("step_off_px").get<double>(), 1.0) << canvas << " " << pointer << ": the step ends elsewhere";
        ++steps;
      }
      plotted.insert(pointer);
      ++points;
    }
  }
  for (const auto& id : plots) { EXPECT_TRUE(drawn_plots.count(id)) << id << ": no chart drawn"; }
  // Every number the plots should show is plotted.
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const std::string run = "/runs/" + std::to_string(i);
    for (size_t k = 0; k < r.runs[i].intervals.size(); ++k) {
      const std::string iv = run + "/intervals/" + std::to_string(k);
      EXPECT_TRUE(plotted.count(iv + "/goodput_bps")) << iv;
      for (size_t p = 0; p < r.runs[i].intervals[k].plane_utilisation.size(); ++p) {
        EXPECT_TRUE(plotted.count(iv + "/plane_utilisation/" + std::to_string(p))) << iv << " plane " << p;
      }
    }
    if (r.runs[i].latency.samples > 0) {
      for (const char* key : {"median_us", "p99_us", "p999_us"}) {
        EXPECT_TRUE(plotted.count(run + "/latency/" + key)) << run << " " << key;
      }
    }
    for (size_t k = 0; k < r.runs[i].latency.cdf_us.size(); ++k) {
      EXPECT_TRUE(plotted.count(run + "/latency/cdf_us/" + std::to_string(k))) << run << " cdf " << k;
    }
    const auto& dr = j.at("derived").at("runs").at(i);
    if (dr.contains("retained")) { EXPECT_TRUE(plotted.count("/derived" + run + "/retained")) << run; }
    if (std::find(plots.begin(), plots.end(), "plot-goodput-bars") != plots.end()) {
      EXPECT_TRUE(plotted.count(run + "/goodput_bps")) << run;
      if (dr.contains("fault_goodput_bps")) { EXPECT_TRUE(plotted.count("/derived" + run + "/fault_goodput_bps")) << run; }
    }
  }
  std::printf("plotted values checked against report.json: %zu (%zu interval steps)\n", points, steps);
  size_t intervals = 0;
  for (const auto& run : r.runs) intervals += run.intervals.size() * (1 + run.intervals.front().plane_utilisation.size());
  EXPECT_EQ(steps, intervals) << "every goodput and plane-load interval drawn as a step";

  // Zoom on the time axis: a typed range applies to every time plot, and
  // "reset zoom" restores the whole run (0 to the last interval's end).
  double end_s = 0;
  for (const auto& run : r.runs)
    for (const auto& iv : run.intervals) end_s = std::max(end_s, iv.t1_s);
  const auto& zoom = probe.at("zoom");
  ASSERT_TRUE(zoom.contains("zoomed")) << "no zoom inputs on the page";
  EXPECT_EQ(zoom.at("zoomed").size(), zoom.at("before").size());
  EXPECT_GE(zoom.at("before").size(), 2u) << "goodput and plane-load plots are time plots";
  for (const auto& range : zoom.at("before")) EXPECT_EQ(range, nlohmann::json::array({0, end_s}));
  for (const auto& range : zoom.at("zoomed")) EXPECT_EQ(range, nlohmann::json::array({0.5, 1.5}));
  for (const auto& range : zoom.at("reset")) EXPECT_EQ(range, nlohmann::json::array({0, end_s}));
  ASSERT_TRUE(zoom.contains("dragged"));
  EXPECT_EQ(zoom.at("dragged").size(), zoom.at("before").size());
  for (const auto& range : zoom.at("dragged")) {  // pixels to seconds and back: equal to rounding
    EXPECT_NEAR(range.at(0).get<double>(), 0.5, 1e-9);
    EXPECT_NEAR(range.at(1).get<double>(), 1.5, 1e-9);
  }

  // Every data-key shows format_number(last key, value at the pointer).
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
                   {"plot-goodput", "plot-retained", "plot-planes", "plot-latency", "plot-latency-cdf"});
}

TEST(ReportHtmlChromium, FaultReportRenders) {
  render_and_check(metaroce::scenario::testing::make_fault_report(), "fault",
                   {"plot-goodput", "plot-goodput-bars", "plot-planes", "plot-latency"});
}

// A clos's page: its topology and tiers table (data-key numbers) as well.
TEST(ReportHtmlChromium, ClosReportRenders) {
  render_and_check(metaroce::scenario::testing::make_clos_report(), "clos",
                   {"plot-goodput", "plot-goodput-bars", "plot-planes", "plot-latency"});
}

}  // namespace
