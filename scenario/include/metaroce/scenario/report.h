// Reports: DIR/report.json (everything, including the scenario text, seeds
// and version to replay), DIR/timeseries.csv (one row per run and interval)
// and DIR/report.html (one self-contained file that works offline, its plots
// drawn by the Chart.js it embeds: goodput over time per transport with fault
// events marked; retained throughput vs loss; per-plane load; latency
// percentiles), plus a terminal summary table.
//
// Every number the page shows that also appears in report.json carries a
// data-key attribute with its JSON pointer (e.g. data-key="/runs/0/goodput_bps")
// and is formatted as format_number() formats it, and every plotted value
// carries its pointer in the plot's data, so a test can check the page
// against the JSON.
#pragma once

#include <optional>
#include <string>

#include "metaroce/scenario/model.h"

namespace metaroce::scenario {

std::string report_json(const Report& r);      // pretty, stable key order
std::string timeseries_csv(const Report& r);
std::string report_html(const Report& r);
std::string summary_table(const Report& r);    // aligned text for the terminal
// How the page formats a number given its JSON pointer's last key (Gb/s with
// 2 decimals for *_bps, percent for utilisation/ratios, us with 1 decimal ...).
std::string format_number(const std::string& key, double value);

// Writes the three files into dir (created if needed); false and *error on failure.
// A single sweep point (Report::point) is not a report: it writes dir/point.json
// only (report_json's layout with "point", without assertions and derived figures).
bool write_report(const Report& r, const std::string& dir, std::string* error);

// Reads report_json's text (report.json or point.json) back into a Report:
// every field it writes (the derived figures are recomputed from the runs, not
// read). nullopt and *error ("SOURCE: /runs/3/seed: missing") when the text is
// not that layout.
std::optional<Report> parse_report_json(const std::string& text, const std::string& source, std::string* error);

}  // namespace metaroce::scenario
