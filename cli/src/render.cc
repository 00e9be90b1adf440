#include "render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "metaroce/api/operation_codec.h"
#include "units.h"

namespace metarocectl {

namespace v1 = metaroce::v1;

// ---- Table ------------------------------------------------------------------

Table::Table(std::vector<std::string> headers)
    : headers_(std::move(headers)), align_(headers_.size(), Align::kLeft) {}

Table& Table::right_align(std::initializer_list<std::size_t> columns) {
  for (std::size_t c : columns)
    if (c < align_.size()) align_[c] = Align::kRight;
  return *this;
}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
  for (const auto& row : rows_)
    for (std::size_t c = 0; c < row.size(); ++c)
      width[c] = std::max(width[c], row[c].size());

  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) line += "  ";
      const std::size_t pad = width[c] - cells[c].size();
      if (align_[c] == Align::kRight) line.append(pad, ' ');
      line += cells[c];
      if (align_[c] == Align::kLeft) line.append(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  emit(headers_);
  for (const auto& row : rows_) emit(row);
  return out;
}

std::string render_key_values(
    const std::vector<std::pair<std::string, std::string>>& items) {
  std::size_t width = 0;
  for (const auto& [key, value] : items) width = std::max(width, key.size());
  std::string out;
  for (const auto& [key, value] : items)
    out += fmt::format("{:<{}}  {}\n", key, width, value);
  return out;
}

// ---- perftest tables --------------------------------------------------------

const std::string_view kBandwidthHeader =
    "#bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
const std::string_view kLatencyHeader =
    "#bytes #samples t_min[usec] t_max[usec] t_median[usec] t_avg[usec] "
    "t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]";

namespace {
const std::vector<std::string_view> kBandwidthTitles = {
    "#bytes", "#iterations", "BW peak[Gb/sec]", "BW average[Gb/sec]", "MsgRate[Mpps]"};
const std::vector<std::string_view> kLatencyTitles = {
    "#bytes", "#samples", "t_min[usec]", "t_max[usec]", "t_median[usec]", "t_avg[usec]",
    "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]"};
}  // namespace

std::string render_fixed_header_table(std::string_view header,
                                      const std::vector<std::string_view>& titles,
                                      const std::vector<std::vector<std::string>>& rows) {
  // Column c starts where its title starts in the header.
  std::vector<std::size_t> starts;
  std::size_t search_from = 0;
  for (std::string_view title : titles) {
    const std::size_t at = header.find(title, search_from);
    starts.push_back(at == std::string_view::npos ? search_from : at);
    search_from = starts.back() + title.size();
  }
  std::string out(header);
  out += '\n';
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::size_t start = c < starts.size() ? starts[c] : line.size() + 1;
      if (c > 0) line.append(line.size() < start ? start - line.size() : 1, ' ');
      line += row[c];
    }
    out += line;
    out += '\n';
  }
  return out;
}

std::string render_bandwidth_table(const v1::JobResult& result) {
  std::vector<std::vector<std::string>> rows;
  for (const v1::BandwidthRow& row : result.bandwidth()) {
    rows.push_back({fmt::format("{}", row.message_bytes()),
                    fmt::format("{}", row.iterations()),
                    fmt::format("{:.2f}", row.peak_bps() / 1e9),
                    fmt::format("{:.2f}", row.average_bps() / 1e9),
                    fmt::format("{:.6f}", row.message_rate() / 1e6)});
  }
  return render_fixed_header_table(kBandwidthHeader, kBandwidthTitles, rows);
}

std::string render_latency_table(const v1::JobResult& result) {
  auto usec = [](double ns) { return fmt::format("{:.2f}", ns / 1e3); };
  std::vector<std::vector<std::string>> rows;
  for (const v1::LatencyRow& row : result.latency()) {
    rows.push_back({fmt::format("{}", row.message_bytes()),
                    fmt::format("{}", row.samples()),
                    usec(static_cast<double>(row.min_ns())),
                    usec(static_cast<double>(row.max_ns())),
                    usec(static_cast<double>(row.median_ns())),
                    usec(row.average_ns()), usec(row.stdev_ns()),
                    usec(static_cast<double>(row.p99_ns())),
                    usec(static_cast<double>(row.p999_ns()))});
  }
  return render_fixed_header_table(kLatencyHeader, kLatencyTitles, rows);
}

std::string path_state_name(v1::PathState state) {
  switch (state) {
    case v1::PATH_STATE_ACTIVE: return "active";
    case v1::PATH_STATE_DEGRADED: return "degraded";
    case v1::PATH_STATE_DOWN: return "down";
    default: return "-";
  }
}

std::string job_state_name(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_STARTING: return "starting";
    case v1::JOB_STATE_RUNNING: return "running";
    case v1::JOB_STATE_DONE: return "done";
    case v1::JOB_STATE_FAILED: return "failed";
    case v1::JOB_STATE_STOPPED: return "stopped";
    default: return "unknown";
  }
}

std::string operation_name(v1::Operation operation) {
  const auto op = metaroce::api::decode_operation(operation);
  return op ? metaroce::transport::operation_name(*op) : "unknown";
}

std::string render_job_summary(const v1::JobInfo& job) {
  const v1::JobResult& r = job.result();
  std::vector<std::pair<std::string, std::string>> items;
  const double retx_share =
      r.data_packets_sent() > 0
          ? static_cast<double>(r.retransmits()) / static_cast<double>(r.data_packets_sent())
          : 0.0;
  items.emplace_back("retransmits",
                     fmt::format("{} ({:.2f}% of {} data packets)", r.retransmits(),
                                 retx_share * 100.0, r.data_packets_sent()));
  items.emplace_back("spurious retransmits", fmt::format("{}", r.spurious_retransmits()));
  items.emplace_back("RTOs", fmt::format("{}", r.rtos()));
  items.emplace_back("path state changes", fmt::format("{}", r.path_state_changes()));
  items.emplace_back("completion errors", fmt::format("{}", r.completion_errors()));
  if (!r.first_error().empty()) items.emplace_back("first error", r.first_error());
  if (!job.error().empty()) items.emplace_back("error", job.error());
  items.emplace_back("verification", r.verification().empty() ? std::string("-")
                                                                : r.verification());
  std::string out = render_key_values(items);
  if (r.paths_size() > 0) {
    Table paths({"connection", "path", "plane", "goodput", "retransmits", "state"});
    paths.right_align({0, 1, 2, 3, 4});
    for (const v1::PathResult& p : r.paths()) {
      paths.add_row({fmt::format("{}", p.connection()), fmt::format("{}", p.path()),
                     fmt::format("{}", p.plane()), format_gbps(p.goodput_bps()),
                     fmt::format("{}", p.retransmits()), path_state_name(p.final_state())});
    }
    out += '\n';
    out += paths.render();
    if (r.paths_omitted() > 0)
      out += fmt::format("({} more paths, of connections beyond the first 1,024, are not listed)\n", r.paths_omitted());
  }
  return out;
}

std::string render_job_report(const v1::JobInfo& job) {
  std::string out = fmt::format(
      "job {}  {}  {}  seed {}  elapsed {}\n\n", job.id(), job_state_name(job.state()),
      operation_name(job.spec().operation()), job.seed(), format_duration_ns(job.elapsed_ns()));
  out += render_bandwidth_table(job.result());
  if (job.result().latency_size() > 0) {
    out += '\n';
    out += render_latency_table(job.result());
  }
  out += '\n';
  out += render_job_summary(job);
  return out;
}

double job_average_goodput_bps(const v1::JobResult& result) {
  double weighted = 0, total_ns = 0, plain = 0;
  for (const v1::BandwidthRow& row : result.bandwidth()) {
    weighted += row.average_bps() * static_cast<double>(row.duration_ns());
    total_ns += static_cast<double>(row.duration_ns());
    plain += row.average_bps();
  }
  if (total_ns > 0) return weighted / total_ns;
  // Rows without durations: an unweighted mean is the best we can do.
  return result.bandwidth_size() > 0 ? plain / result.bandwidth_size() : 0.0;
}

// ---- progress ---------------------------------------------------------------

std::string format_progress_line(const v1::JobProgress& p, std::string_view label,
                                 bool show_size) {
  const std::string interval = fmt::format("{:.2f}-{:.2f} s", static_cast<double>(p.start_ns()) / 1e9,
                                           static_cast<double>(p.end_ns()) / 1e9);
  std::string line = fmt::format("[{}]  {:>11}  {:>5.2f} Gb/s  {:>4.2f} Mpps  retx {}  loss {:.2f}%  RTOs {}",
                                 label, interval, p.goodput_bps() / 1e9, p.packet_rate() / 1e6,
                                 p.retransmits(), p.loss_seen() * 100.0, p.rtos());
  // A path changing state (down, degraded, back) is what an operator looks for in a fault run.
  if (p.path_state_changes() > 0) line += fmt::format("  path changes {}", p.path_state_changes());
  if (show_size) line += fmt::format("  size {}", format_size(p.message_bytes()));
  return line;
}

std::string format_progress_bar(double fraction, int width, std::string_view suffix) {
  if (!(fraction >= 0)) fraction = 0;  // also catches NaN
  fraction = std::min(fraction, 1.0);
  const int filled = static_cast<int>(std::lround(fraction * width));
  std::string bar = "[";
  bar.append(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(width - filled), '.');
  bar += fmt::format("] {:>3}%", static_cast<int>(std::floor(fraction * 100.0)));
  if (!suffix.empty()) {
    bar += "  ";
    bar += suffix;
  }
  return bar;
}

ProgressDisplay::ProgressDisplay(std::FILE* out, std::FILE* err, bool bar_enabled)
    : out_(out), err_(err), bar_enabled_(bar_enabled) {}

ProgressDisplay::~ProgressDisplay() { finish(); }

void ProgressDisplay::erase_bar() {
  if (!bar_visible_) return;
  std::fputs("\r\033[K", err_);  // carriage return + erase to end of line
  std::fflush(err_);
  bar_visible_ = false;
}

void ProgressDisplay::draw_bar() {
  if (!bar_enabled_ || bar_text_.empty()) return;
  std::fputs("\r\033[K", err_);
  std::fputs(bar_text_.c_str(), err_);
  std::fflush(err_);
  bar_visible_ = true;
}

void ProgressDisplay::line(std::string_view text) {
  erase_bar();
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fputc('\n', out_);
  std::fflush(out_);  // before the bar reappears on the shared terminal
  draw_bar();
}

void ProgressDisplay::set_bar(std::string_view text) { bar_text_ = std::string(text); }

void ProgressDisplay::bar(std::string_view text) {
  set_bar(text);
  draw_bar();
}

void ProgressDisplay::bar() { draw_bar(); }

void ProgressDisplay::finish() {
  erase_bar();
  bar_text_.clear();
}

}  // namespace metarocectl
