// Text output of metarocectl: aligned tables, perftest-style result tables,
// iperf3-style progress lines and a terminal progress bar.
//
// Everything here returns strings (so it is unit-testable) except
// ProgressDisplay, which owns the terminal interplay of stdout and stderr.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metaroce/v1/traffic.pb.h"

namespace metarocectl {

// Columns separated by two spaces, padded to the widest cell; numbers are
// usually right-aligned, text left-aligned. No trailing spaces.
class Table {
 public:
  enum class Align { kLeft, kRight };

  explicit Table(std::vector<std::string> headers);
  // Right-aligns the given columns (all others stay left-aligned).
  Table& right_align(std::initializer_list<std::size_t> columns);
  void add_row(std::vector<std::string> cells);
  std::size_t rows() const { return rows_.size(); }
  std::string render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

// "key   value" lines with the keys padded to the longest.
std::string render_key_values(
    const std::vector<std::pair<std::string, std::string>>& items);

// perftest's table header texts (ib_write_bw / ib_write_lat).
extern const std::string_view kBandwidthHeader;
extern const std::string_view kLatencyHeader;

// A table whose header is a fixed text: every cell starts at the column
// where its title (found in order in `header`) starts, as perftest prints. A
// value wider than its column pushes the rest of the row right by what it
// overflows, keeping at least one space.
std::string render_fixed_header_table(std::string_view header,
                                      const std::vector<std::string_view>& titles,
                                      const std::vector<std::vector<std::string>>& rows);

std::string render_bandwidth_table(const metaroce::v1::JobResult& result);
std::string render_latency_table(const metaroce::v1::JobResult& result);

// Retransmits, RTOs, path changes, the per-path table and the verification.
std::string render_job_summary(const metaroce::v1::JobInfo& job);

// Bandwidth table, latency table (when there are samples) and summary.
std::string render_job_report(const metaroce::v1::JobInfo& job);

// Goodput of a finished job averaged over its sizes (weighted by duration).
double job_average_goodput_bps(const metaroce::v1::JobResult& result);

// "[job 3]  1.00-2.00 s  12.34 Gb/s  0.38 Mpps  retx 12  loss 0.52%"
// (with " size 64K" appended when the job sweeps sizes).
std::string format_progress_line(const metaroce::v1::JobProgress& progress,
                                 std::string_view label, bool show_size);

// "[#########...........]  42%" followed by `suffix` (if any).
std::string format_progress_bar(double fraction, int width,
                                std::string_view suffix);

std::string job_state_name(metaroce::v1::JobState state);      // "running"
std::string path_state_name(metaroce::v1::PathState state);    // "active", "degraded", "down"
std::string operation_name(metaroce::v1::Operation operation);  // "write_imm"

// Writes result lines to stdout and, when stderr is a terminal, keeps a
// carriage-return-updated progress bar on stderr: the bar is erased before
// each stdout line and redrawn after it, and cleared for good by finish().
class ProgressDisplay {
 public:
  ProgressDisplay(std::FILE* out, std::FILE* err, bool bar_enabled);
  ~ProgressDisplay();
  void line(std::string_view text);  // one stdout line (newline added)
  void set_bar(std::string_view text);  // replaces the bar's text; drawn with the next line()
  void bar(std::string_view text);      // replaces the bar's text and draws it
  void bar();                           // (re)draws the bar
  void finish();                     // clears the bar
  bool bar_enabled() const { return bar_enabled_; }

 private:
  void erase_bar();
  void draw_bar();

  std::FILE* out_;
  std::FILE* err_;
  bool bar_enabled_;
  std::string bar_text_;
  bool bar_visible_ = false;
};

}  // namespace metarocectl
