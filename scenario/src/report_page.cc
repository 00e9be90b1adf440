// report.html: the CSS and the page, assembled from the header, verdict, key
// figures per job, the plots (report_plots.cc) with their tables, the runs and
// assertions tables and the scenario YAML; at its end the scripts that draw
// the plots: Chart.js and report_charts.js (embedded at build time,
// chartjs_embed.h) and the plot specs as JSON.

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "chartjs_embed.h"
#include "metaroce/scenario/report.h"
#include "report_internal.h"

namespace metaroce::scenario {

using namespace report_internal;

namespace {

const char* kCss = R"CSS(
*{box-sizing:border-box}
body{margin:0;background:#f1f3f5;color:#212529;font:14px/1.45 "DejaVu Sans",Helvetica,Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:24px 20px 40px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:18px;margin:0 0 6px}
.desc{font-size:15px;color:#495057;margin:0 0 10px}
.meta{display:flex;flex-wrap:wrap;gap:6px 18px;font-size:13px;color:#495057}
.meta b{color:#212529;font-weight:600}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:bold;letter-spacing:.03em}
.mode-sim{background:#e7f5ff;color:#1864ab;border:1px solid #a5d8ff}
.mode-live{background:#fff4e6;color:#d9480f;border:1px solid #ffd8a8}
.verdict{margin:18px 0;padding:14px 18px;border-radius:8px;font-size:18px;font-weight:bold}
.verdict ul{margin:6px 0 0;padding-left:22px;font-size:14px;font-weight:normal}
.verdict.pass{background:#d3f9d8;border:1px solid #8ce99a;color:#2b8a3e}
.verdict.fail{background:#ffe3e3;border:1px solid #ffa8a8;color:#c92a2a}
.verdict.inconclusive{background:#fff3bf;border:1px solid #ffd43b;color:#8f5b00}
.verdict.none{background:#e9ecef;border:1px solid #ced4da;color:#495057}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:18px}
.kf{background:#fff;border:1px solid #dee2e6;border-left:6px solid #868e96;border-radius:6px;padding:10px 14px;min-width:230px}
.kf .name{font-weight:bold}
.kf .big{font-size:22px;font-weight:bold;font-variant-numeric:tabular-nums}
.kf .small{font-size:12px;color:#495057}
section.card{background:#fff;border:1px solid #dee2e6;border-radius:8px;padding:16px 18px;margin:0 0 18px}
.note{font-size:13px;color:#495057;margin:0 0 10px}
figure.plot{margin:0 0 10px}
.chart{position:relative;height:380px;margin:6px 0}
.chart.small{height:270px}
.chart canvas{display:block}
.panels{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:10px 16px}
.panels.two{grid-template-columns:repeat(auto-fill,minmax(520px,1fr))}
.empty{padding:28px;text-align:center;color:#868e96;border:1px dashed #dee2e6;border-radius:6px;margin:6px 0}
.zoom{font-size:12px;color:#495057;margin:0 0 4px}
.zoom input{width:90px;font:inherit;padding:1px 4px}
.zoom button{font:inherit;padding:1px 8px;cursor:pointer}
.zoom .hint{color:#868e96}
ol.events{font-size:12px;color:#495057;margin:6px 0 0;padding-left:24px;columns:2 320px}
ol.events .t{color:#868e96}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:5px 9px;border-bottom:1px solid #e9ecef;text-align:left;vertical-align:top}
th{background:#f8f9fa;font-weight:600;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:nth-child(even) td{background:#fcfcfd}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:middle}
.ok{color:#2b8a3e;font-weight:bold}
.bad{color:#c92a2a;font-weight:bold}
.warn{color:#e67700;font-weight:bold}
.err{display:block;color:#c92a2a;font-size:12px}
details{background:#fff;border:1px solid #dee2e6;border-radius:8px;padding:10px 18px}
summary{cursor:pointer;font-weight:bold}
pre{background:#f8f9fa;border:1px solid #e9ecef;border-radius:4px;padding:10px;overflow:auto;font:12px/1.4 "DejaVu Sans Mono",monospace;white-space:pre-wrap}
footer{font-size:12px;color:#868e96;margin-top:14px}
)CSS";

std::string state_html(const RunResult& run) {
  const std::string cls = run.state == "done" ? "ok" : run.state == "failed" ? "bad" : "warn";
  std::string s = "<span class=\"" + cls + "\">" + esc(run.state) + "</span>";
  if (!run.error.empty()) s += "<span class=\"err\">" + esc(run.error) + "</span>";
  return s;
}

}  // namespace

// ------------------------------------------------------------------ public

std::string report_html(const Report& r) {
  const Derived d = derive(r);
  const auto styles = job_styles(d);
  // The specs of every chart on the page, drawn by report_charts.js at the end.
  ojson charts = ojson::array();
  auto place = [&charts](Plot plot) {
    for (auto& c : plot.charts) charts.push_back(std::move(c));
    return std::move(plot.html);
  };
  std::ostringstream h;
  const std::string title = r.scenario_name.empty() ? std::string("scenario") : r.scenario_name;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    << "<title>" << esc(title) << " - metaroce-testbed scenario report</title>\n<style>" << kCss
    << "</style>\n</head>\n<body>\n<main>\n";

  // Header.
  const bool sim = r.mode == "sim";
  h << "<header>\n<h1>" << esc(title) << "</h1>\n";
  if (!r.description.empty()) h << "<p class=\"desc\">" << esc(r.description) << "</p>\n";
  h << "<div class=\"meta\"><span class=\"badge " << (sim ? "mode-sim" : "mode-live") << "\">"
    << (sim ? "SIM" : r.mode == "live" ? "LIVE" : esc(r.mode)) << "</span><span>"
    << (sim ? "simulator, virtual time" : r.mode == "live" ? "live daemons" : "mode " + esc(r.mode)) << "</span>";
  h << "<span>fabric: <b>" << dk("/planes", "planes", r.planes) << "</b> planes x <b>"
    << dk("/plane_rate_bps", "plane_rate_bps", r.plane_rate_bps) << "</b></span>";
  if (r.topology) {
    const TopologySummary& t = *r.topology;
    h << "<span>clos: <b>" << dk("/topology/hosts", "hosts", t.hosts) << "</b> hosts, <b>"
      << dk("/topology/leaves", "leaves", t.leaves) << "</b> leaves x <b>" << dk("/topology/spines", "spines", t.spines)
      << "</b> spines per plane, leaves <b>" << dk("/topology/oversubscription", "oversubscription", t.oversubscription)
      << "</b> oversubscribed</span>";
  }
  h << "<span>runs: <b>" << r.runs.size() << "</b></span>";
  if (r.seed <= (uint64_t{1} << 53))
    h << "<span>seed: <b>" << dk("/seed", "seed", static_cast<double>(r.seed)) << "</b></span>";
  else
    h << "<span>seed: <b>" << r.seed << "</b></span>";
  if (!r.source.empty()) h << "<span>file: <b>" << esc(r.source) << "</b></span>";
  if (!r.started_at.empty()) h << "<span>started: <b>" << esc(r.started_at) << "</b></span>";
  if (!r.version.empty()) h << "<span>metaroce-testbed <b>" << esc(r.version) << "</b></span>";
  h << "</div>\n</header>\n";

  // Verdict: INCONCLUSIVE first, whatever the assertions say, when the host limited a live run.
  if (!r.faithful()) {
    std::vector<std::string> problems;
    for (const auto& run : r.runs)
      for (const auto& p : run.fidelity.problems)
        if (std::find(problems.begin(), problems.end(), p) == problems.end()) problems.push_back(p);
    h << "<div class=\"verdict inconclusive\">INCONCLUSIVE: this host's datapath, not the emulated fabric, limited "
         "the run, so its figures do not answer the question (assertions: "
      << dk("/derived/assertions_failed", "assertions_failed", static_cast<double>(d.failed)) << " of "
      << dk("/derived/assertions_total", "assertions_total", static_cast<double>(r.assertions.size()))
      << " failed). See Fidelity below.<ul>";
    for (const auto& p : problems) h << "<li>" << esc(p) << "</li>";
    h << "</ul></div>\n";
  } else if (r.assertions.empty()) {
    h << "<div class=\"verdict none\">No assertions were checked</div>\n";
  } else if (d.failed == 0 && r.unresolved() > 0) {
    h << "<div class=\"verdict inconclusive\">INCONCLUSIVE: "
      << dk("/derived/assertions_inconclusive", "assertions_inconclusive", static_cast<double>(r.unresolved()))
      << " of " << dk("/derived/assertions_total", "assertions_total", static_cast<double>(r.assertions.size()))
      << " assertions are within their measurement's resolution of the threshold: the windows held too few "
         "messages to tell which side they are on<ul>";
    for (const auto& a : r.assertions)
      if (a.inconclusive) h << "<li>" << esc(a.text) << (a.detail.empty() ? "" : ": " + esc(a.detail)) << "</li>";
    h << "</ul></div>\n";
  } else if (d.failed == 0 && r.known_failures() == 0) {
    h << "<div class=\"verdict pass\">PASS: all " << dk("/derived/assertions_total", "assertions_total",
                                                       static_cast<double>(r.assertions.size()))
      << " assertions passed</div>\n";
  } else if (d.failed == 0) {
    // Not a plain PASS: the failures the file names as known issues are listed first.
    h << "<div class=\"verdict inconclusive\">PASS except "
      << dk("/derived/assertions_known_failures", "assertions_known_failures", static_cast<double>(r.known_failures()))
      << " of " << dk("/derived/assertions_total", "assertions_total", static_cast<double>(r.assertions.size()))
      << " assertions, which fail on known issues the scenario names:<ul>";
    for (const auto& a : r.assertions)
      if (a.known_failure())
        h << "<li>" << esc(a.text) << ": " << esc(a.detail) << "<br>known issue: " << esc(a.known_issue) << "</li>";
    h << "</ul></div>\n";
  } else {
    h << "<div class=\"verdict fail\">FAIL: "
      << dk("/derived/assertions_failed", "assertions_failed", static_cast<double>(d.failed)) << " of "
      << dk("/derived/assertions_total", "assertions_total", static_cast<double>(r.assertions.size()))
      << " assertions failed<ul>";
    for (const auto& a : r.assertions)
      if (!a.passed && !a.inconclusive) h << "<li>" << esc(a.text) << (a.detail.empty() ? "" : ": " + esc(a.detail)) << "</li>";
    h << "</ul></div>\n";
  }

  // The answer, in words and numbers: did each transport degrade or stop?
  {
    std::string rows;
    for (size_t i = 0; i < r.runs.size(); ++i) {
      const std::string text = outcome_text(r.runs[i], d.runs[i]);
      if (text.empty()) continue;
      const std::string& o = d.runs[i].outcome;
      rows += "<li><b>" + esc(run_label(r.runs[i])) + "</b> (" + esc(transport_name(r.runs[i].transport)) +
              "): <span class=\"" + (o == "stopped" ? "bad" : o == "degraded" ? "warn" : "ok") +
              "\">" + esc(o) + "</span>" +
              esc(text.substr(o.size())) + "</li>";
    }
    if (!rows.empty())
      h << "<section class=\"card answer\"><h2>Degrade or stop?</h2><ul>" << rows << "</ul>"
        << (r.faithful() ? "" : "<p class=\"note\">Not a faithful measurement: see the verdict above.</p>")
        << "</section>\n";
  }

  // Key figures per job.
  h << "<div class=\"cards\">\n";
  for (const auto& job : d.jobs) {
    const Style& st = styles.at(job);
    h << "<div class=\"kf\" style=\"border-left-color:" << st.colour << "\"><div class=\"name\">" << esc(job) << " <span class=\"small\">("
      << esc(transport_name(d.job_transport.at(job))) << ")</span></div>";
    if (d.sweep) {
      size_t first = r.runs.size(), last = r.runs.size();
      for (size_t i = 0; i < r.runs.size(); ++i)
        if (r.runs[i].job == job) {
          if (first == r.runs.size()) first = i;
          last = i;
        }
      if (last < r.runs.size() && d.runs[last].retained) {
        h << "<div class=\"big\">" << dk(derived_ptr(last, "retained"), "retained", *d.runs[last].retained)
          << "</div><div class=\"small\">retained at " << esc(r.runs[last].sweep_parameter) << " "
          << esc(sweep_label(r.runs[last].sweep_parameter, r.runs[last].sweep_value)) << "</div>";
      }
      if (first < r.runs.size())
        h << "<div class=\"small\">" << dk(run_ptr(first, "goodput_bps"), "goodput_bps", r.runs[first].goodput_bps)
          << " at " << esc(r.runs[first].sweep_parameter) << " "
          << esc(sweep_label(r.runs[first].sweep_parameter, r.runs[first].sweep_value)) << "</div>";
    } else {
      for (size_t i = 0; i < r.runs.size(); ++i) {
        if (r.runs[i].job != job) continue;
        h << "<div class=\"big\">" << dk(run_ptr(i, "goodput_bps"), "goodput_bps", r.runs[i].goodput_bps) << "</div>";
        if (d.runs[i].fault_retained)
          h << "<div class=\"small\">retained during the fault: "
            << dk(derived_ptr(i, "fault_retained"), "fault_retained", *d.runs[i].fault_retained) << "</div>";
        h << "<div class=\"small\">" << dk(run_ptr(i, "retransmits"), "retransmits", static_cast<double>(r.runs[i].retransmits))
          << " retransmits, " << dk(run_ptr(i, "rtos"), "rtos", static_cast<double>(r.runs[i].rtos)) << " RTOs</div>";
        break;
      }
    }
    h << "</div>\n";
  }
  h << "</div>\n";

  // 1. Goodput over time.
  h << "<section class=\"card\"><h2>Goodput over time</h2><p class=\"note\">Goodput per measurement interval"
    << (d.sweep ? ", one panel per sweep value" : "")
    << (d.sweep_values.size() > 9 ? " (9 of " + std::to_string(d.sweep_values.size()) + " values, first and last included)" : "")
    << ". Dashed vertical lines mark the fault events (numbered when their labels do not fit; the key is below). "
       "Hover for values, click a legend entry to hide or show its series.</p>\n"
    << place(plot_goodput(r, d, styles)) << "</section>\n";

  // 2. Retained vs sweep value, or goodput per run.
  if (d.sweep) {
    h << "<section class=\"card\"><h2>Retained throughput vs " << esc(sweep_axis_title(d.parameter))
      << "</h2><p class=\"note\">Retained = goodput of a run / goodput of the same job at the first sweep value ("
      << esc(sweep_label(d.parameter, d.sweep_values.empty() ? 0 : d.sweep_values.front())) << ").</p>\n"
      << place(plot_retained(r, d, styles));
    h << "<table><thead><tr><th>job</th><th>transport</th>";
    for (double v : d.sweep_values) h << "<th class=\"n\">" << esc(d.parameter) << " " << esc(sweep_label(d.parameter, v)) << "</th>";
    h << "</tr></thead><tbody>\n";
    for (const auto& job : d.jobs) {
      h << "<tr><td><span class=\"swatch\" style=\"background:" << styles.at(job).colour << "\"></span>" << esc(job)
        << "</td><td>" << esc(transport_name(d.job_transport.at(job))) << "</td>";
      for (double v : d.sweep_values) {
        h << "<td class=\"n\">";
        for (size_t i = 0; i < r.runs.size(); ++i)
          if (r.runs[i].job == job && r.runs[i].sweep_value == v) {
            if (d.runs[i].retained) h << "<b>" << dk(derived_ptr(i, "retained"), "retained", *d.runs[i].retained) << "</b><br>";
            h << dk(run_ptr(i, "goodput_bps"), "goodput_bps", r.runs[i].goodput_bps);
            break;
          }
        h << "</td>";
      }
      h << "</tr>\n";
    }
    h << "</tbody></table></section>\n";
  } else {
    h << "<section class=\"card\"><h2>Goodput per run</h2><p class=\"note\">Mean goodput over the whole run"
      << "; where the run had fault events, also the mean during the fault window (first to last event) and the "
         "share of the pre-fault goodput it retained.</p>\n"
      << place(plot_goodput_bars(r, d, styles)) << "</section>\n";
  }

  // 3. Per-plane load.
  h << "<section class=\"card\"><h2>Load per plane</h2><p class=\"note\">Utilisation of each plane per interval "
    << (r.topology ? "(clos: bytes the plane delivered to hosts x 8 / (interval x its hosts' links together))"
                   : "(bytes forwarded x 8 / (interval x plane rate))")
    << " in percent; one line per plane, one plot per run.</p>\n"
    << place(plot_planes(r, d, styles)) << "</section>\n";

  // 3b. A clos's tiers: how loaded each plane's host links and leaf-spine links were.
  if (r.topology) {
    const TopologySummary& t = *r.topology;
    h << "<section class=\"card\"><h2>Link utilisation per tier</h2><p class=\"note\">Clos, per plane, over each "
         "run's duration: the mean utilisation of the plane's host links (host to leaf and back, "
      << dk("/topology/host_rate_bps", "host_rate_bps", t.host_rate_bps) << " each) and of its leaf-spine links ("
      << dk("/topology/leaf_spine_rate_bps", "leaf_spine_rate_bps", t.leaf_spine_rate_bps)
      << " each), and the busiest link of each tier: bytes forwarded x 8 / (duration x the link's rate).</p>\n"
      << "<table><thead><tr><th>run</th><th class=\"n\">plane</th><th class=\"n\">host links, mean</th>"
         "<th class=\"n\">busiest host link</th><th class=\"n\">leaf-spine links, mean</th>"
         "<th class=\"n\">busiest leaf-spine link</th></tr></thead><tbody>\n";
    for (size_t i = 0; i < r.runs.size(); ++i)
      for (size_t p = 0; p < r.runs[i].tiers.size(); ++p) {
        const TierLoad& l = r.runs[i].tiers[p];
        const std::string at = run_ptr(i, "tiers/" + std::to_string(p) + "/");
        h << "<tr><td><span class=\"swatch\" style=\"background:" << styles.at(r.runs[i].job).colour << "\"></span>"
          << esc(run_label(r.runs[i])) << "</td><td class=\"n\">" << p << "</td><td class=\"n\">"
          << dk(at + "host_mean", "host_mean", l.host_mean) << "</td><td class=\"n\">"
          << dk(at + "host_max", "host_max", l.host_max) << "</td><td class=\"n\">"
          << dk(at + "leaf_spine_mean", "leaf_spine_mean", l.leaf_spine_mean) << "</td><td class=\"n\">"
          << dk(at + "leaf_spine_max", "leaf_spine_max", l.leaf_spine_max) << "</td></tr>\n";
      }
    h << "</tbody></table></section>\n";
  }

  // 4. Latency.
  std::vector<size_t> shown;
  const std::string lat = place(plot_latency(r, d, styles, &shown));
  h << "<section class=\"card\"><h2>Latency percentiles</h2><p class=\"note\">Median, p99 and p99.9 operation "
       "latency per run in microseconds (log scale).";
  std::vector<std::string> skipped;
  for (const auto& run : r.runs)
    if (run.latency.samples == 0) skipped.push_back(run_label(run));
  if (!skipped.empty()) {
    h << " Skipped (0 samples): ";
    for (size_t k = 0; k < skipped.size(); ++k) h << (k ? ", " : "") << esc(skipped[k]);
    h << ".";
  }
  h << "</p>\n" << lat;
  h << "<h3>Message completion time (CDF)</h3><p class=\"note\">The fraction of each run's messages that "
       "completed within a given time (microseconds, log scale): further left is faster, the top of a curve is its "
       "tail; hover to compare the runs at one percentile.</p>\n"
    << place(plot_latency_cdf(r, d, styles));
  if (!shown.empty()) {
    h << "<table><thead><tr><th>run</th><th class=\"n\">samples</th><th class=\"n\">min</th><th class=\"n\">median</th>"
         "<th class=\"n\">avg</th><th class=\"n\">p99</th><th class=\"n\">p99.9</th><th class=\"n\">max</th></tr></thead><tbody>\n";
    for (size_t i : shown) {
      const auto& l = r.runs[i].latency;
      const std::string p = "/runs/" + std::to_string(i) + "/latency/";
      h << "<tr><td><span class=\"swatch\" style=\"background:" << styles.at(r.runs[i].job).colour << "\"></span>"
        << esc(run_label(r.runs[i])) << "</td><td class=\"n\">" << dk(p + "samples", "samples", static_cast<double>(l.samples))
        << "</td><td class=\"n\">" << dk(p + "min_us", "min_us", l.min_us) << "</td><td class=\"n\">"
        << dk(p + "median_us", "median_us", l.median_us) << "</td><td class=\"n\">" << dk(p + "avg_us", "avg_us", l.avg_us)
        << "</td><td class=\"n\">" << dk(p + "p99_us", "p99_us", l.p99_us) << "</td><td class=\"n\">"
        << dk(p + "p999_us", "p999_us", l.p999_us) << "</td><td class=\"n\">" << dk(p + "max_us", "max_us", l.max_us)
        << "</td></tr>\n";
    }
    h << "</tbody></table>";
  }
  h << "</section>\n";

  // Summary table.
  h << "<section class=\"card\"><h2>Runs</h2><table><thead><tr><th>run</th><th>transport</th>";
  if (d.sweep) h << "<th class=\"n\">" << esc(d.parameter) << "</th>";
  h << "<th class=\"n\">goodput</th>";
  if (d.sweep) h << "<th class=\"n\">retained</th>";
  h << "<th class=\"n\">retransmits</th><th class=\"n\">spurious</th><th class=\"n\">RTOs</th>"
       "<th class=\"n\">path state changes</th><th>verification</th><th>state</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const auto& run = r.runs[i];
    h << "<tr><td><span class=\"swatch\" style=\"background:" << styles.at(run.job).colour << "\"></span>"
      << esc(run.job) << "</td><td>" << esc(transport_name(run.transport)) << "</td>";
    if (d.sweep) h << "<td class=\"n\">" << dk(run_ptr(i, "sweep_value"), "sweep_value", run.sweep_value) << "</td>";
    h << "<td class=\"n\">" << dk(run_ptr(i, "goodput_bps"), "goodput_bps", run.goodput_bps) << "</td>";
    if (d.sweep)
      h << "<td class=\"n\">"
        << (d.runs[i].retained ? dk(derived_ptr(i, "retained"), "retained", *d.runs[i].retained) : std::string("-"))
        << "</td>";
    h << "<td class=\"n\">" << dk(run_ptr(i, "retransmits"), "retransmits", static_cast<double>(run.retransmits))
      << "</td><td class=\"n\">"
      << dk(run_ptr(i, "spurious_retransmits"), "spurious_retransmits", static_cast<double>(run.spurious_retransmits))
      << "</td><td class=\"n\">" << dk(run_ptr(i, "rtos"), "rtos", static_cast<double>(run.rtos))
      << "</td><td class=\"n\">"
      << dk(run_ptr(i, "path_state_changes"), "path_state_changes", static_cast<double>(run.path_state_changes))
      << "</td><td>";
    if (run.verification.empty()) {
      h << "<span class=\"warn\">not verified</span>";
    } else {
      const bool ok = run.verification == "passed" && run.verify_failures == 0;
      h << "<span class=\"" << (ok ? "ok" : "bad") << "\">" << esc(run.verification) << "</span>";
      if (run.verify_failures > 0)
        h << " (" << dk(run_ptr(i, "verify_failures"), "verify_failures", static_cast<double>(run.verify_failures))
          << " failures)";
    }
    h << "</td><td>" << state_html(run) << "</td></tr>\n";
  }
  h << "</tbody></table></section>\n";

  // Assertions.
  h << "<section class=\"card\"><h2>Assertions</h2>";
  if (r.assertions.empty()) {
    h << "<p class=\"note\">The scenario has no assertions.</p>";
  } else {
    h << "<table><thead><tr><th>assertion</th><th>result</th><th>detail</th></tr></thead><tbody>\n";
    for (const auto& a : r.assertions)
      h << "<tr><td>" << esc(a.text) << "</td><td><span class=\""
        << (a.passed ? "ok\">PASS" : a.inconclusive ? "warn\">TOO CLOSE" : a.known_failure() ? "warn\">KNOWN FAIL" : "bad\">FAIL")
        << "</span></td><td>" << esc(a.detail)
        << (a.known_issue.empty() ? "" : "<br>known issue: " + esc(a.known_issue) +
                                             (a.passed ? " (it passes now: the marker may go)" : ""))
        << "</td></tr>\n";
    h << "</tbody></table>";
  }
  h << "</section>\n";

  // Packet captures: the windows around timeline events (capture:), linked.
  if (!r.captures.empty()) {
    h << "<section class=\"card\"><h2>Packet captures</h2><p class=\"note\">The frames around the timeline events "
         "that asked for them (<code>capture:</code>), one pcapng file per run and window, next to this page. "
         "Each frame's comment says where it was seen and what the emulator did to it (a drop's cause; ECN marks, "
         "corruption, reordering and duplicates on the frames it delivered). Open them with Wireshark or "
         "<code>tshark -r FILE -X lua_script:wireshark/metaroce.lua</code> (the MetaRoCE dissector). "
         "&ldquo;not written&rdquo; counts frames the capture saw but could not write (its writer fell behind or "
         "the disk refused them): the capture never slows the datapath down instead.</p>"
         "<table><thead><tr><th>run</th><th>event</th><th class=\"n\">window (s)</th><th class=\"n\">covered (s)</th>"
         "<th>where</th><th>file</th><th class=\"n\">frames</th><th class=\"n\">not written</th><th>note</th></tr>"
         "</thead><tbody>\n";
    for (size_t i = 0; i < r.captures.size(); ++i) {
      const CaptureResult& c = r.captures[i];
      const std::string p = "/captures/" + std::to_string(i) + "/";
      std::string where = c.where;
      if (!c.planes.empty()) {
        where += ", planes";
        for (uint32_t pl : c.planes) where += " " + std::to_string(pl);
      }
      if (c.snap_length) where += ", " + std::to_string(c.snap_length) + " bytes per frame";
      if (!c.sources.empty()) {
        where += " (";
        for (size_t k = 0; k < c.sources.size(); ++k) where += (k ? ", " : "") + c.sources[k];
        where += ")";
      }
      h << "<tr><td>" << c.run << ": " << esc(c.run_label) << "</td><td>" << esc(c.event) << " at "
        << strf("%.3f", c.at_s) << " s</td><td class=\"n\">" << strf("[%.3f, %.3f]", c.from_s, c.to_s)
        << "</td><td class=\"n\">"
        << (c.captured_from_s && c.captured_to_s ? strf("[%.3f, %.3f]", *c.captured_from_s, *c.captured_to_s)
                                                  : std::string("-"))
        << "</td><td>" << esc(where) << "</td><td>"
        << (c.file.empty() ? std::string("none") : "<a href=\"" + esc(c.file) + "\">" + esc(c.file) + "</a>")
        << "</td><td class=\"n\">" << dk(p + "frames", "frames", static_cast<double>(c.frames))
        << "</td><td class=\"n\">"
        << dk(p + "frames_not_written", "frames_not_written", static_cast<double>(c.frames_not_written))
        << "</td><td>" << esc(c.note) << "</td></tr>\n";
    }
    h << "</tbody></table></section>\n";
  }

  // Fidelity: live runs only.
  bool any_measured = false;
  for (const auto& run : r.runs) any_measured |= run.fidelity.measured;
  if (any_measured) {
    h << "<section class=\"card\"><h2>Fidelity</h2><p class=\"note\">Whether this host's datapath kept up, so "
         "that the transports reacted to the emulated fabric: per worker, the share of the run it was busy, used a "
         "CPU, and waited for one; how late frames left the emulator and transport timers fired; how long received "
         "frames may have waited for the worker (an upper bound); the longest any one frame or timer waited (a stall of the whole datapath, once, hides under every p99); the share of every 10 ms it could run real-time, and in how many windows it used that up; frames lost by cause (emulator causes are the fabric at work; any other cause is the host).</p>";
    for (size_t i = 0; i < r.runs.size(); ++i) {
      const Fidelity& f = r.runs[i].fidelity;
      if (!f.measured) continue;
      h << "<h3>" << esc(run_label(r.runs[i])) << ": <span class=\"" << (f.faithful() ? "ok\">faithful" : "bad\">not faithful")
        << "</span></h3>";
      h << "<table><thead><tr><th>daemon</th><th>worker</th><th>busy</th><th>CPU</th><th>waited for CPU</th>"
           "<th>frames late p50 / p99</th><th>timers late p50 / p99</th><th>received frames waited p50 / p99</th>"
           "<th>longest wait</th><th>real-time share (used up)</th></tr></thead><tbody>\n";
      for (const auto& w : f.workers)
        h << "<tr><td>" << esc(w.daemon) << "</td><td>" << esc(w.worker) << "</td><td>"
          << strf("%.1f%%", 100 * w.busy_fraction) << "</td><td>" << strf("%.1f%%", 100 * w.cpu_fraction) << "</td><td>"
          << strf("%.1f%%", 100 * w.run_delay_fraction) << "</td><td>"
          << (w.frames_timed ? strf("%.0f / %.0f us", w.frame_late_p50_us, w.frame_late_p99_us) : std::string("-"))
          << "</td><td>"
          << (w.timers_timed ? strf("%.0f / %.0f us", w.timer_late_p50_us, w.timer_late_p99_us) : std::string("-"))
          << "</td><td>"
          << (w.frames_received ? strf("%.0f / %.0f us", w.receive_wait_p50_us, w.receive_wait_p99_us)
                                : std::string("-"))
          << "</td><td>" << strf("%.1f ms", w.stall_max_us / 1e3) << "</td><td>"
          << (w.realtime_share > 0
                  ? strf("%.0f%%", 100 * w.realtime_share) + " (" + std::to_string(w.realtime_demotions) + ")"
                  : std::string("none"))
          << "</td></tr>\n";
      h << "</tbody></table><p>frames lost: ";
      if (f.drops.empty()) h << "none";
      bool first = true;
      for (const auto& [cause, n] : f.drops) {
        h << (first ? "" : ", ") << esc(cause) << " <b>" << n << "</b>";
        first = false;
      }
      h << "; MetaRoCE frames reordered within their path: <b>" << f.reordered_in_path << "</b>";
      if (f.host_cpus > 0)
        h << "; CPU time the hypervisor took from this host's " << f.host_cpus << " CPUs (steal): <b>"
          << strf("%.0f ms", f.host_steal_s * 1e3) << "</b>";
      h << "</p>";
      if (!f.problems.empty()) {
        h << "<ul>";
        for (const auto& p : f.problems) h << "<li class=\"bad\">" << esc(p) << "</li>";
        h << "</ul>";
      }
    }
    h << "</section>\n";
  }

  h << "<details><summary>Scenario YAML (to replay this run)</summary>\n<pre>" << esc(r.scenario_yaml)
    << "</pre></details>\n";
  h << "<footer>Generated by metaroce-testbed" << (r.version.empty() ? "" : " " + esc(r.version))
    << ". Full data: report.json and timeseries.csv next to this file.</footer>\n";
  h << "</main>\n";
  // The plot specs as JSON inside <script>: "<", ">" and "&" only occur in
  // its strings, where \u escapes keep any "</script>" in the report's text
  // from ending the element.
  std::string spec = charts.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(spec.size());
  for (const char c : spec) {
    if (c == '<') safe += "\\u003c";
    else if (c == '>') safe += "\\u003e";
    else if (c == '&') safe += "\\u0026";
    else safe += c;
  }
  h << "<script>" << kChartJs << "</script>\n<script type=\"application/json\" id=\"report-plots\">" << safe
    << "</script>\n<script>" << kReportChartsJs << "</script>\n</body>\n</html>\n";
  return h.str();
}

}  // namespace metaroce::scenario
