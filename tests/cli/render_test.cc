// Tables, perftest tables and progress output.
#include "render.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace metarocectl {
namespace {

namespace v1 = metaroce::v1;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Table, AlignsColumns) {
  Table table({"name", "value", "note"});
  table.right_align({1});
  table.add_row({"a", "1", "x"});
  table.add_row({"longer name", "12345", ""});
  table.add_row({"b", "22", "last"});
  const std::vector<std::string> lines = lines_of(table.render());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "name         value  note");
  EXPECT_EQ(lines[1], "a                1  x");
  EXPECT_EQ(lines[2], "longer name  12345");  // no trailing spaces
  EXPECT_EQ(lines[3], "b               22  last");
}

TEST(Table, MissingCellsAreEmpty) {
  Table table({"a", "b"});
  table.add_row({"only"});
  EXPECT_EQ(table.render(), "a     b\nonly\n");
}

TEST(KeyValues, PadsKeys) {
  EXPECT_EQ(render_key_values({{"id", "3"}, {"state", "done"}}), "id     3\nstate  done\n");
}

v1::JobResult sample_result() {
  v1::JobResult result;
  v1::BandwidthRow* row = result.add_bandwidth();
  row->set_message_bytes(65536);
  row->set_iterations(5000);
  row->set_peak_bps(11.634e9);
  row->set_average_bps(11.62e9);
  row->set_message_rate(22178);
  row->set_duration_ns(1'000'000'000);
  row = result.add_bandwidth();
  row->set_message_bytes(4096);
  row->set_iterations(1234567);
  row->set_peak_bps(9.5e9);
  row->set_average_bps(9.0e9);
  row->set_message_rate(274658);
  row->set_duration_ns(3'000'000'000);
  v1::LatencyRow* lat = result.add_latency();
  lat->set_message_bytes(65536);
  lat->set_samples(5000);
  lat->set_min_ns(5100);
  lat->set_max_ns(98000);
  lat->set_median_ns(6200);
  lat->set_average_ns(6543.2);
  lat->set_stdev_ns(810);
  lat->set_p99_ns(12000);
  lat->set_p999_ns(45000);
  return result;
}

TEST(Perftest, BandwidthHeaderIsExact) {
  EXPECT_EQ(kBandwidthHeader,
            "#bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]");
  const std::vector<std::string> lines = lines_of(render_bandwidth_table(sample_result()));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], kBandwidthHeader);
  // Each value starts where its title starts.
  const std::string& row = lines[1];
  EXPECT_EQ(row.find("65536"), 0u);
  EXPECT_EQ(row.find("5000"), lines[0].find("#iterations"));
  EXPECT_EQ(row.find("11.63"), lines[0].find("BW peak"));
  EXPECT_EQ(row.find("11.62"), lines[0].find("BW average"));
  EXPECT_EQ(row.find("0.022178"), lines[0].find("MsgRate"));
  EXPECT_EQ(lines[2].find("1234567"), lines[0].find("#iterations"));
  EXPECT_EQ(lines[2].find("0.274658"), lines[0].find("MsgRate"));
}

TEST(Perftest, LatencyTable) {
  EXPECT_EQ(kLatencyHeader,
            "#bytes #samples t_min[usec] t_max[usec] t_median[usec] t_avg[usec] t_stdev[usec] "
            "99% percentile[usec] 99.9% percentile[usec]");
  const std::vector<std::string> lines = lines_of(render_latency_table(sample_result()));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].find("5.10"), lines[0].find("t_min"));
  EXPECT_EQ(lines[1].find("6.20"), lines[0].find("t_median"));
  EXPECT_EQ(lines[1].find("6.54"), lines[0].find("t_avg"));
  EXPECT_EQ(lines[1].find("12.00"), lines[0].find("99% percentile"));
  EXPECT_EQ(lines[1].find("45.00"), lines[0].find("99.9% percentile"));
}

TEST(Perftest, OverflowingValueKeepsASpace) {
  const std::string table = render_fixed_header_table("#a #b", {"#a", "#b"}, {{"123456", "7"}});
  EXPECT_EQ(table, "#a #b\n123456 7\n");
}

TEST(JobReport, HasEveryPart) {
  v1::JobInfo job;
  job.set_id(3);
  job.set_state(v1::JOB_STATE_DONE);
  job.set_seed(42);
  *job.mutable_result() = sample_result();
  v1::JobResult& r = *job.mutable_result();
  r.set_retransmits(12);
  r.set_data_packets_sent(2400);
  r.set_spurious_retransmits(1);
  r.set_rtos(2);
  r.set_path_state_changes(3);
  r.set_verified(true);
  r.set_verification("passed");
  v1::PathResult* path = r.add_paths();
  path->set_connection(1);
  path->set_path(0);
  path->set_plane(1);
  path->set_goodput_bps(5.5e9);
  path->set_retransmits(12);
  path->set_final_state(v1::PATH_STATE_DEGRADED);
  const std::string report = render_job_report(job);
  EXPECT_NE(report.find("job 3  done  write  seed 42"), std::string::npos) << report;
  EXPECT_NE(report.find(std::string(kBandwidthHeader)), std::string::npos);
  EXPECT_NE(report.find("#bytes #samples"), std::string::npos);
  EXPECT_NE(report.find("retransmits           12 (0.50% of 2400 data packets)"), std::string::npos) << report;
  EXPECT_NE(report.find("spurious retransmits  1"), std::string::npos) << report;
  EXPECT_NE(report.find("RTOs                  2"), std::string::npos) << report;
  EXPECT_NE(report.find("path state changes    3"), std::string::npos) << report;
  EXPECT_NE(report.find("verification          passed"), std::string::npos) << report;
  EXPECT_NE(report.find("connection  path  plane    goodput  retransmits  state"), std::string::npos) << report;
  EXPECT_NE(report.find("5.50 Gb/s"), std::string::npos);
  EXPECT_NE(report.find("degraded"), std::string::npos);
}

TEST(JobReport, AverageGoodputIsDurationWeighted) {
  // (11.62 * 1 + 9.0 * 3) / 4
  EXPECT_NEAR(job_average_goodput_bps(sample_result()), 9.655e9, 1e3);
  EXPECT_EQ(job_average_goodput_bps(v1::JobResult{}), 0.0);
}

TEST(Progress, LineLooksLikeIperf) {
  v1::JobProgress p;
  p.set_job_id(3);
  p.set_start_ns(1'000'000'000);
  p.set_end_ns(2'000'000'000);
  p.set_goodput_bps(12.34e9);
  p.set_packet_rate(0.38e6);
  p.set_retransmits(12);
  p.set_loss_seen(0.0052);
  p.set_message_bytes(65536);
  EXPECT_EQ(format_progress_line(p, "job 3", false),
            "[job 3]  1.00-2.00 s  12.34 Gb/s  0.38 Mpps  retx 12  loss 0.52%  RTOs 0");
  EXPECT_EQ(format_progress_line(p, "job 3", true),
            "[job 3]  1.00-2.00 s  12.34 Gb/s  0.38 Mpps  retx 12  loss 0.52%  RTOs 0  size 64K");
  p.set_rtos(2);
  p.set_path_state_changes(1);
  EXPECT_EQ(format_progress_line(p, "job 3", false),
            "[job 3]  1.00-2.00 s  12.34 Gb/s  0.38 Mpps  retx 12  loss 0.52%  RTOs 2  path changes 1");
}

TEST(Progress, Bar) {
  EXPECT_EQ(format_progress_bar(0.5, 10, ""), "[#####.....]  50%");
  EXPECT_EQ(format_progress_bar(1.5, 4, "9.00 Gb/s"), "[####] 100%  9.00 Gb/s");
  EXPECT_EQ(format_progress_bar(-1, 4, ""), "[....]   0%");
}

TEST(Progress, DisplayWithoutBarWritesPlainLines) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    ProgressDisplay display(out, err, /*bar_enabled=*/false);
    display.bar("[##..] 50%");
    display.line("hello");
  }
  std::rewind(out);
  char buffer[64] = {};
  EXPECT_EQ(std::fread(buffer, 1, sizeof buffer - 1, out), 6u);
  EXPECT_STREQ(buffer, "hello\n");
  EXPECT_EQ(std::ftell(err), 0);  // nothing on stderr without a terminal
  std::fclose(out);
  std::fclose(err);
}

TEST(Progress, DisplayErasesTheBarAroundLines) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  {
    ProgressDisplay display(out, err, /*bar_enabled=*/true);
    display.bar("BAR");
    display.line("x");
  }  // finish() clears it
  std::rewind(err);
  char buffer[128] = {};
  const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, err);
  const std::string text(buffer, n);
  EXPECT_EQ(text, "\r\033[KBAR\r\033[K\r\033[KBAR\r\033[K");
  std::fclose(out);
  std::fclose(err);
}

TEST(Names, StatesAndOperations) {
  EXPECT_EQ(job_state_name(v1::JOB_STATE_FAILED), "failed");
  EXPECT_EQ(operation_name(v1::OPERATION_UNSPECIFIED), "write");
  EXPECT_EQ(operation_name(v1::OPERATION_CMP_SWAP), "cmp_swap");
}

}  // namespace
}  // namespace metarocectl
