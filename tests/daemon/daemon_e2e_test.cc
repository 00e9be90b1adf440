// End to end: metaroced daemons in a netns lab (two AF_XDP endpoint hosts and
// an AF_XDP fabric node between them), driven only through metarocectl, as an
// operator would. Each test runs in its own process (ctest), with its own
// uniquely named lab, temp directory and daemons, all removed at the end.
// Needs root, netns and AF_XDP; otherwise every test prints SKIPPED with why.
// The TLS/TCP test uses the unprivileged UDP datapath on loopback and runs anywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "grpc_sweep.h"
#include "metaroce/v1/connection.grpc.pb.h"
#include "metaroce/v1/daemon.grpc.pb.h"
#include "metaroce/v1/traffic.grpc.pb.h"
#include "lab_daemons.h"
#include "udp_daemon_pair.h"
#include "metaroce/capture/pcapng.h"

using daemon_test::Ctl;
using daemon_test::Lab;
using daemon_test::num;
using daemon_test::skip_reason;
using daemon_test::slurp;
using daemon_test::spawn;
using daemon_test::wait_exit;
namespace fs = std::filesystem;
namespace ml = metaroce::lab;
using nlohmann::json;

namespace {

// After the daemons stopped: no XDP program is left on any of the lab's interfaces.
void expect_no_xdp_program(const std::string& name) {
  for (const std::string& ns : std::vector<std::string>{ml::host_netns(name, 0), ml::host_netns(name, 1), ml::fabric_netns(name)}) {
    const auto links = ml::run_command({"ip", "-n", ns, "-d", "link", "show"});
    EXPECT_EQ(links.out.find("prog/xdp"), std::string::npos) << ns << ":\n" << links.out;
    EXPECT_EQ(links.out.find("xdpgeneric"), std::string::npos) << ns << ":\n" << links.out;
  }
}

// After the lab was taken down: none of its namespaces is left.
void expect_no_namespace(const std::string& name) {
  std::vector<std::string> names;
  std::string err;
  ASSERT_TRUE(ml::list_netns(ml::Ip(), &names, &err)) << err;
  for (const auto& n : names) EXPECT_NE(n.rfind(name + "-", 0), 0u) << n << " left behind";
}

}  // namespace

TEST(DaemonE2E, StatusPortsAndConfig) {
  NEED_LAB();
  Lab lab;
  const Ctl st = lab.ctl("h0", {"-o", "json", "status"});
  ASSERT_EQ(st.status, 0) << st.err;
  EXPECT_EQ(st.j()["name"], "h0");
  EXPECT_EQ(st.j()["role"], "ROLE_ENDPOINT");
  EXPECT_EQ(st.j()["planes"], Lab::kPlanes);
  const Ctl ports = lab.ctl("h0", {"-o", "json", "port", "list"});
  ASSERT_EQ(ports.status, 0) << ports.err;
  ASSERT_EQ(ports.j()["ports"].size(), Lab::kPlanes);
  EXPECT_EQ(ports.j()["ports"][0]["kind"], "afxdp");
  const Ctl fports = lab.ctl("fab", {"port", "list"});
  EXPECT_EQ(fports.status, 0) << fports.err;
  EXPECT_NE(fports.out.find("h1p1"), std::string::npos) << fports.out;
  const Ctl cfg = lab.ctl("h0", {"config"});
  EXPECT_EQ(cfg.status, 0);
  EXPECT_NE(cfg.out.find("datapath: afxdp"), std::string::npos) << cfg.out;
  // The same counters over gRPC and at /metrics (fabric namespace, loopback).
  const Ctl counters = lab.ctl("fab", {"counters", "--filter", "link_packets_in"});
  EXPECT_EQ(counters.status, 0) << counters.err;
  // The daemon has a token: /metrics asks for it too.
  auto get_metrics = [&](const std::string& header) {
    return ml::run_command({"ip", "netns", "exec", ml::fabric_netns(lab.name()), "bash", "-c",
                            "exec 3<>/dev/tcp/127.0.0.1/9464; printf 'GET /metrics HTTP/1.0\\r\\n" + header +
                                "\\r\\n' >&3; cat <&3"});
  };
  const auto refused = get_metrics("");
  EXPECT_NE(refused.out.find("401"), std::string::npos) << refused.out.substr(0, 300);
  EXPECT_EQ(refused.out.find("metaroce_"), std::string::npos) << "no counters without the token";
  EXPECT_NE(get_metrics("Authorization: Bearer wrong-token-0000000\\r\\n").out.find("401"), std::string::npos);
  const auto metrics = get_metrics("Authorization: Bearer s3cret-e2e-token-" + std::to_string(getpid()) + "\\r\\n");
  EXPECT_NE(metrics.out.find("# TYPE metaroce_link_packets_in_total counter"), std::string::npos) << metrics.out.substr(0, 500);
}

TEST(DaemonE2E, WriteJobUnderOnePercentLossIsVerified) {
  NEED_LAB();
  Lab lab;
  const json r = lab.run_job({"--op", "write", "--size", "16K", "--duration", "2s", "--paths", "4", "--queue-depth", "16",
                              "--interval", "500ms"});
  ASSERT_TRUE(r.is_object()) << lab.log("h0");
  EXPECT_EQ(r["state"], "JOB_STATE_DONE") << r.dump(2) << lab.log("h0");
  EXPECT_TRUE(r["result"]["verified"].get<bool>()) << r["result"]["verification"];
  EXPECT_EQ(r["result"]["verification"], "passed");
  ASSERT_EQ(r["result"]["bandwidth"].size(), 1u);
  EXPECT_GT(num(r["result"]["bandwidth"][0]["iterations"]), 50u);
  EXPECT_GT(r["result"]["bandwidth"][0]["average_bps"].get<double>(), 0.0);
  EXPECT_GT(num(r["result"]["retransmits"]), 0u) << "1% loss must show as retransmits";
  EXPECT_GE(r["result"]["intervals"].size(), 3u);
  EXPECT_EQ(r["result"]["paths"].size(), 4u);
  // Queue depth on /metrics and GetCounters: the job's 16 WRITEs in flight
  // queued at some ECMP link, and the gauge of the bytes queued now exists
  // for every link (dashboard "Queueing").
  const Ctl queues = lab.ctl("fab", {"-o", "json", "counters", "--filter", "link_queue"});
  ASSERT_EQ(queues.status, 0) << queues.err;
  double deepest = 0;
  size_t now_series = 0;
  const json queue_counters = queues.j();
  for (const json& k : queue_counters["counters"]) {
    if (k["name"] == "link_queue_high_water_bytes") deepest = std::max(deepest, k.value("value", 0.0));
    if (k["name"] == "link_queue_bytes") ++now_series;
  }
  EXPECT_GT(deepest, 0.0) << queues.out;
  EXPECT_GT(now_series, 0u) << queues.out;
  // The human output: perftest's table header.
  const Ctl run = lab.ctl("h0", {"traffic", "run", "--peer", lab.server("h1"), "--op", "write", "--size", "4K",
                                 "--iterations", "200"});
  EXPECT_EQ(run.status, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("#bytes"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("BW average[Gb/sec]"), std::string::npos) << run.out;
}

TEST(DaemonE2E, EveryOperationAndASizeSweepAreVerified) {
  NEED_LAB();
  Lab lab;
  for (const char* op : {"write_imm", "read", "send", "fetch_add", "cmp_swap"}) {
    std::vector<std::string> args = {"--op", op, "--iterations", "300", "--streams", "2"};
    if (std::string(op).find('_') == std::string::npos || std::string(op) == "write_imm")
      args.insert(args.end(), {"--size", "8K"});
    const json r = lab.run_job(args);
    ASSERT_TRUE(r.is_object()) << op;
    EXPECT_EQ(r["state"], "JOB_STATE_DONE") << op << ": " << r["error"] << r["result"]["verification"];
    EXPECT_TRUE(r["result"]["verified"].get<bool>()) << op << ": " << r["result"]["verification"];
    EXPECT_EQ(num(r["result"]["bandwidth"][0]["iterations"]), 300u) << op << ": iterations count per connection";
  }
  const json sweep = lab.run_job({"--op", "write", "--sizes", "512,4K,32K", "--iterations", "200"});
  ASSERT_TRUE(sweep.is_object());
  EXPECT_EQ(sweep["state"], "JOB_STATE_DONE") << sweep["result"]["verification"];
  ASSERT_EQ(sweep["result"]["bandwidth"].size(), 3u);
  EXPECT_EQ(num(sweep["result"]["bandwidth"][2]["message_bytes"]), 32768u);
  EXPECT_EQ(sweep["result"]["latency"].size(), 3u);
}

TEST(DaemonE2E, RoceV2BaselineThroughTheSameFabric) {
  NEED_LAB();
  Lab lab;
  const json r = lab.run_job({"--transport", "rocev2", "--op", "write", "--size", "8K", "--iterations", "400",
                              "--connections", "2"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["state"], "JOB_STATE_DONE") << r["error"];
  EXPECT_TRUE(r["result"]["verified"].get<bool>()) << r["result"]["verification"];
  const Ctl bad = lab.ctl("h0", {"traffic", "start", "--peer", lab.server("h1"), "--transport", "rocev2", "--op", "read"});
  EXPECT_EQ(bad.status, 3);
  EXPECT_NE(bad.err.find("INVALID_ARGUMENT"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("not supported by rocev2"), std::string::npos) << bad.err;
}

TEST(DaemonE2E, FabricChangesTakeEffectMidJob) {
  NEED_LAB();
  Lab lab;
  const Ctl start = lab.ctl("h0", {"-o", "json", "traffic", "start", "--peer", lab.server("h1"), "--op", "write", "--size",
                                   "16K", "--duration", "4s", "--paths", "4", "--interval", "250ms"});
  ASSERT_EQ(start.status, 0) << start.err;
  const std::string id = std::to_string(num(start.j()["id"]));
  // Wait (bounded) until the job runs, then take plane 1 down for a second.
  for (int i = 0; i < 200; ++i) {
    const json j = lab.ctl("h0", {"-o", "json", "traffic", "result", id}).j();
    if (j.is_object() && j["state"] == "JOB_STATE_RUNNING") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const Ctl down = lab.ctl("fab", {"-o", "json", "fabric", "down", "--plane", "1"});
  ASSERT_EQ(down.status, 0) << down.err;
  EXPECT_EQ(num(down.j()["links_changed"]), 4u) << down.out;  // 2 ECMP links x 2 directions
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const Ctl show = lab.ctl("fab", {"-o", "json", "fabric", "show"});
  ASSERT_EQ(show.status, 0);
  const json shown = show.j();  // kept: a range-for over a temporary's member would dangle
  uint64_t link_down_drops = 0;
  for (const auto& l : shown["links"])
    if (num(l["plane"]) == 1) link_down_drops += num(l["drops_link_down"]);
  if (link_down_drops == 0) {
    // Diagnostics for an intermittent failure under CPU load: both hosts' ports
    // (ring and kick counters) and the job's per-path state.
    for (const char* h : {"h0", "h1", "fab"}) std::cerr << h << " ports:\n" << lab.ctl(h, {"port", "list"}).out;
    std::cerr << "job: " << lab.ctl("h0", {"-o", "json", "traffic", "result", id}).out << "\n";
  }
  EXPECT_GT(link_down_drops, 0u) << "plane 1 was down while the job sent on it\n" << show.out;
  ASSERT_EQ(lab.ctl("fab", {"fabric", "up", "--plane", "1"}).status, 0);
  ASSERT_EQ(lab.ctl("fab", {"fabric", "set", "--plane", "0", "--loss", "5%"}).status, 0);
  lab.ctl("h0", {"traffic", "watch", id});
  const json r = lab.ctl("h0", {"-o", "json", "traffic", "result", id}).j();
  EXPECT_EQ(r["state"], "JOB_STATE_DONE") << r["error"];
  EXPECT_TRUE(r["result"]["verified"].get<bool>()) << r["result"]["verification"];
  EXPECT_GT(num(r["result"]["path_state_changes"]), 0u) << "the paths on plane 1 went down and came back";
  ASSERT_EQ(lab.ctl("fab", {"fabric", "reset"}).status, 0);
  const json after = lab.ctl("fab", {"-o", "json", "fabric", "show"}).j();
  for (const auto& l : after["links"]) {
    EXPECT_TRUE(l["up"].get<bool>());
    EXPECT_NEAR(l["loss_probability"].get<double>(), 0.01, 1e-12) << "reset returns to the configured base";
  }
}

// Kernel traffic (ping, as an operator would try first) crosses every plane
// of the fabric node, not only plane 0; the largest frame the lab's MTU
// allows crosses too; and what the node cannot carry is dropped under a named
// cause in `fabric show` and /metrics, never silently.
TEST(DaemonE2E, KernelTrafficCrossesEveryPlaneAndEveryDropHasACause) {
  NEED_LAB();
  Lab lab;
  ASSERT_EQ(lab.ctl("fab", {"fabric", "set", "--loss", "0"}).status, 0);
  const std::string h0 = ml::host_netns(lab.name(), 0);
  auto ping = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"ip", "netns", "exec", h0, "ping", "-n", "-q"};
    argv.insert(argv.end(), args.begin(), args.end());
    return ml::run_command(argv);
  };
  // Every plane, with the largest payload the lab's MTU allows unfragmented
  // (MTU - 20 B IPv4 - 8 B ICMP), so the fabric carries full-size frames.
  const std::string largest = std::to_string(lab.config().mtu - 28);
  for (uint32_t p = 0; p < Lab::kPlanes; ++p) {
    const std::string to = ml::ip_to_string(ml::host_ip(lab.config(), 1, p));
    const auto r = ping({"-c", "3", "-W", "2", to});
    EXPECT_EQ(r.status, 0) << "plane " << p << ": ping " << to << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("3 received"), std::string::npos) << "plane " << p << "\n" << r.out;
    const auto big = ping({"-c", "2", "-W", "2", "-M", "do", "-s", largest, to});
    EXPECT_NE(big.out.find("2 received"), std::string::npos) << "plane " << p << ", " << largest << " B\n" << big.out << big.err;
  }
  const json before = lab.ctl("fab", {"-o", "json", "fabric", "show"}).j();
  auto cause = [](const json& state, const char* name) -> uint64_t {
    return state.contains("drops_by_cause") && state["drops_by_cause"].contains(name) ? num(state["drops_by_cause"][name]) : 0;
  };
  EXPECT_EQ(cause(before, "no_route"), 0u) << before.dump();
  // A unicast MAC no host has: no_route, counted by cause.
  const std::string stranger = ml::ip_to_string(ml::host_ip(lab.config(), 1, 0) + 50);
  ASSERT_EQ(ml::run_command({"ip", "-n", h0, "neigh", "replace", stranger, "lladdr", "02:00:00:00:99:99", "dev", "p0"}).status, 0);
  EXPECT_NE(ping({"-c", "2", "-W", "1", stranger}).status, 0);
  // A frame longer than the node's frames (the lab's MTU raised behind the
  // daemons' back on one veth pair): frames_too_large, not a silent loss.
  ASSERT_EQ(ml::run_command({"ip", "-n", h0, "link", "set", "p0", "mtu", "3000"}).status, 0);
  ASSERT_EQ(ml::run_command({"ip", "-n", ml::fabric_netns(lab.name()), "link", "set", "h0p0", "mtu", "3000"}).status, 0);
  EXPECT_NE(ping({"-c", "2", "-W", "1", "-M", "do", "-s", "2500", ml::ip_to_string(ml::host_ip(lab.config(), 1, 0))}).status, 0);
  const Ctl after = lab.ctl("fab", {"-o", "json", "fabric", "show"});
  ASSERT_EQ(after.status, 0) << after.err;
  const json a = after.j();
  EXPECT_EQ(cause(a, "no_route"), 2u) << after.out;
  EXPECT_EQ(cause(a, "frames_too_large"), 2u) << after.out;
  uint64_t sum = 0;
  for (const auto& [k, v] : a["drops_by_cause"].items()) sum += num(v);
  EXPECT_EQ(num(a["frames_dropped"]), sum) << "the total is the sum of its causes\n" << after.out;
  const Ctl text = lab.ctl("fab", {"fabric", "show"});
  EXPECT_NE(text.out.find("frames_too_large 2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("no_route 2"), std::string::npos) << text.out;
  const Ctl counters = lab.ctl("fab", {"-o", "json", "counters", "--filter", "worker_frames_too_large_total"});
  ASSERT_EQ(counters.status, 0) << counters.err;
  const json listed = counters.j();
  ASSERT_EQ(listed["counters"].size(), 1u) << counters.out;
  EXPECT_EQ(listed["counters"][0]["value"].get<double>(), 2.0) << counters.out;
}

// Capture: the fabric node's points (with the emulator's drops and their
// causes) and an endpoint's, into pcapng files that tshark and the project's
// dissector read; bad requests are refused naming the field.
TEST(DaemonE2E, CaptureWritesPcapngTheDissectorReads) {
  NEED_LAB();
  const fs::path captures = fs::temp_directory_path() / ("mrcap-" + std::to_string(getpid()));
  setenv("METAROCE_CAPTURE_DIR", captures.c_str(), 1);  // the daemons inherit it
  Lab lab;
  const Ctl fab = lab.ctl("fab", {"capture", "start", "--file", "fabric.pcapng", "--packets", "4000", "--duration", "30s"});
  ASSERT_EQ(fab.status, 0) << fab.err << fab.out;
  const json r = lab.run_job({"--op", "write", "--size", "16K", "--duration", "1s", "--paths", "4"});
  EXPECT_EQ(r["state"], "JOB_STATE_DONE") << r.dump(2);
  const Ctl stop = lab.ctl("fab", {"-o", "json", "capture", "stop"});
  ASSERT_EQ(stop.status, 0) << stop.err;
  const json info = stop.j();
  EXPECT_FALSE(info["running"].get<bool>());
  EXPECT_GT(num(info["packets_written"]), 100u) << info.dump(2);
  EXPECT_LE(num(info["packets_written"]), 4000u) << "max_packets is a bound";
  const fs::path file = captures / "fabric.pcapng";
  ASSERT_TRUE(fs::exists(file)) << info.dump(2);
  EXPECT_EQ(info["path"], file.string());

  // An endpoint's transmissions, bounded by packets.
  const Ctl ep = lab.ctl("h0", {"-o", "json", "capture", "start", "--file", "h0.pcapng", "--point", "endpoint-tx",
                                "--packets", "50", "--duration", "20s"});
  ASSERT_EQ(ep.status, 0) << ep.err;
  lab.run_job({"--op", "write", "--size", "4K", "--duration", "500ms"});
  const Ctl ep_status = lab.ctl("h0", {"-o", "json", "capture", "status"});
  const json ep_info = ep_status.j();
  EXPECT_EQ(ep_info["stop_reason"], "max_packets") << ep_info.dump(2);
  EXPECT_EQ(num(ep_info["packets_written"]), 50u);

  // Refusals name the field.
  const Ctl bad_name = lab.ctl("fab", {"capture", "start", "--file", "../escape.pcapng", "--packets", "1"});
  EXPECT_EQ(bad_name.status, 3) << bad_name.err;
  EXPECT_NE(bad_name.err.find("spec.file"), std::string::npos) << bad_name.err;
  const Ctl wrong_role = lab.ctl("fab", {"capture", "start", "--file", "x.pcapng", "--point", "endpoint-rx", "--packets", "1"});
  EXPECT_EQ(wrong_role.status, 3) << wrong_role.err;
  EXPECT_NE(wrong_role.err.find("spec.points[0]"), std::string::npos) << wrong_role.err;
  const Ctl unbounded = lab.ctl("fab", {"capture", "start", "--file", "x.pcapng"});
  EXPECT_NE(unbounded.status, 0);

  // tshark and the dissector: MetaRoCE data and ACKs, each frame's capture point in its comment.
  if (ml::run_command({"tshark", "--version"}).status != 0) {
    std::cout << "SKIPPED (part): tshark is not installed; the files were not decoded\n";
  } else {
    const std::string lua = std::string(METAROCE_SOURCE_DIR) + "/wireshark/metaroce.lua";
    const auto fields = ml::run_command({"tshark", "-X", "lua_script:" + lua, "-r", file.string(), "-T", "fields",
                                         "-e", "metaroce.opcode", "-e", "frame.comment"});
    ASSERT_EQ(fields.status, 0) << fields.err;
    EXPECT_NE(fields.out.find("0x01\tfabric in (before the emulator), from host 0"), std::string::npos) << fields.out.substr(0, 2000);
    EXPECT_NE(fields.out.find("0x10\tfabric out (after the emulator), to host 0"), std::string::npos);
    const auto flagged = ml::run_command({"tshark", "-X", "lua_script:" + lua, "-r", file.string(), "-Y",
                                          "_ws.expert.severity == \"Error\""});
    EXPECT_EQ(flagged.out, "") << "frames the dissector flags as malformed";
  }
  std::error_code ec;
  fs::remove_all(captures, ec);
}

// A ring of files for long runs: the capture moves on to the next file at
// the file size asked for and removes the oldest, so at most N are kept,
// each a complete pcapng file; Capture.Read (metarocectl capture fetch)
// copies a file byte for byte and refuses the one still being written.
TEST(DaemonE2E, CaptureRingKeepsTheNewestFilesAndFetchCopiesThem) {
  NEED_LAB();
  const fs::path captures = fs::temp_directory_path() / ("mrring-" + std::to_string(getpid()));
  setenv("METAROCE_CAPTURE_DIR", captures.c_str(), 1);  // the daemons inherit it
  Lab lab;
  const Ctl start = lab.ctl("fab", {"-o", "json", "capture", "start", "--file", "ring.pcapng", "--ring", "3",
                                    "--ring-file-packets", "300", "--point", "fabric-in"});
  ASSERT_EQ(start.status, 0) << start.err << start.out;
  EXPECT_EQ(start.j()["files"], json::array({"ring-00001.pcapng"})) << start.out;
  const json r = lab.run_job({"--op", "write", "--size", "16K", "--duration", "1s", "--paths", "4"});
  EXPECT_EQ(r["state"], "JOB_STATE_DONE") << r.dump(2);
  // The ring's current file is the one being written.
  const Ctl running = lab.ctl("fab", {"-o", "json", "capture", "status"});
  const json live = running.j();
  ASSERT_TRUE(live["running"].get<bool>()) << running.out << "a ring has no bound of its own: it runs until stopped";
  const std::string current = live["files"].back().get<std::string>();
  const fs::path local = fs::temp_directory_path() / ("mrring-fetched-" + std::to_string(getpid()) + ".pcapng");
  const Ctl busy = lab.ctl("fab", {"capture", "fetch", "--file", current, "--to", local.string()});
  EXPECT_NE(busy.status, 0);
  EXPECT_NE(busy.err.find("being written"), std::string::npos) << busy.err;
  EXPECT_FALSE(fs::exists(local)) << "a failed fetch leaves no file";

  const Ctl stop = lab.ctl("fab", {"-o", "json", "capture", "stop"});
  ASSERT_EQ(stop.status, 0) << stop.err;
  const json info = stop.j();
  const uint64_t written = num(info["packets_written"]);
  ASSERT_GT(written, 900u) << "enough frames for more than three files\n" << info.dump(2);
  const json files = info["files"];
  ASSERT_EQ(files.size(), 3u) << info.dump(2);
  const uint64_t sequence_total = (written + 299) / 300;  // files begun
  EXPECT_EQ(num(info["files_removed"]), sequence_total - 3) << info.dump(2);
  std::vector<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(captures)) on_disk.push_back(e.path().filename().string());
  std::sort(on_disk.begin(), on_disk.end());
  std::vector<std::string> kept;
  for (const auto& f : files) kept.push_back(f.get<std::string>());
  EXPECT_EQ(on_disk, kept) << "the oldest files are removed";
  char last[32];
  std::snprintf(last, sizeof last, "ring-%05llu.pcapng", static_cast<unsigned long long>(sequence_total));
  EXPECT_EQ(kept.back(), last);
  uint64_t frames = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    std::string err;
    const auto f = metaroce::capture::read_pcapng((captures / kept[i]).string(), &err);
    ASSERT_TRUE(f) << err;
    if (i + 1 < kept.size()) {
      EXPECT_EQ(f->frames.size(), 300u) << kept[i];
    } else {
      EXPECT_LE(f->frames.size(), 300u);
    }
    frames += f->frames.size();
    for (const auto& fr : f->frames) EXPECT_EQ(fr.comment.rfind("fabric in", 0), 0u) << fr.comment;
  }
  EXPECT_EQ(frames, written - 300 * (sequence_total - 3));

  // Fetch: the same bytes.
  const Ctl fetch = lab.ctl("fab", {"capture", "fetch", "--file", kept[0], "--to", local.string()});
  ASSERT_EQ(fetch.status, 0) << fetch.err;
  const auto slurp = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(slurp(local), slurp(captures / kept[0]));
  const Ctl missing = lab.ctl("fab", {"capture", "fetch", "--file", "none.pcapng", "--to", local.string()});
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("NOT_FOUND"), std::string::npos) << missing.err;
  const Ctl escape = lab.ctl("fab", {"capture", "fetch", "--file", "../etc.pcapng", "--to", local.string()});
  EXPECT_EQ(escape.status, 3) << escape.err;
  EXPECT_NE(escape.err.find("file: must be"), std::string::npos) << escape.err;

  // The ring's flags are checked before anything starts.
  const Ctl no_size = lab.ctl("fab", {"capture", "start", "--file", "r.pcapng", "--ring", "3"});
  EXPECT_NE(no_size.status, 0);
  EXPECT_NE(no_size.err.find("--ring"), std::string::npos) << no_size.err;
  const Ctl one = lab.ctl("fab", {"capture", "start", "--file", "r.pcapng", "--ring", "1", "--ring-file-packets", "5"});
  EXPECT_NE(one.status, 0) << one.out;
  std::error_code ec;
  fs::remove(local, ec);
  fs::remove_all(captures, ec);
}

TEST(DaemonE2E, BadRequestsGetTheRightCodeAndTheDaemonKeepsServing) {
  NEED_LAB();
  Lab lab;
  struct Case {
    std::string who;
    std::vector<std::string> args;
    int rc;
    std::string code, text;
  };
  const std::vector<Case> cases = {
      {"h0", {"traffic", "start", "--peer", lab.server("h1"), "--paths", "99"}, 3, "INVALID_ARGUMENT", "params.paths"},
      {"h0", {"traffic", "start", "--peer", lab.server("h1"), "--queue-depth", "5000"}, 3, "INVALID_ARGUMENT", "queue_depth"},
      {"h0", {"connection", "show", "4242"}, 3, "NOT_FOUND", "no connection 4242"},
      {"h0", {"connection", "delete", "4242"}, 3, "NOT_FOUND", "no connection 4242"},
      {"h0", {"traffic", "result", "999"}, 3, "NOT_FOUND", "no job 999"},
      {"h0", {"traffic", "stop", "999"}, 3, "NOT_FOUND", "no job 999"},
      {"h0", {"memory", "deregister", "77"}, 3, "NOT_FOUND", "no operator region 77"},
      {"h0", {"fabric", "show"}, 3, "FAILED_PRECONDITION", "no fabric"},
      {"fab", {"connection", "list"}, 3, "FAILED_PRECONDITION", "no endpoint"},
      {"fab", {"fabric", "set", "--plane", "9", "--loss", "1%"}, 3, "INVALID_ARGUMENT", "selector.plane"},
      {"fab", {"fabric", "set", "--ecmp", "2", "--loss", "1%"}, 3, "INVALID_ARGUMENT", "selector.ecmp"},
      {"fab", {"fabric", "down", "--hosts", "0,5"}, 3, "INVALID_ARGUMENT", "host"},
      // Every string of every request is bounded before it is stored or echoed (request_limits.h).
      {"h0", {"traffic", "start", "--peer", "unix:///" + std::string(4000, 'p')}, 3, "INVALID_ARGUMENT",
       "spec.peers[0]: at most 256 bytes (got 4008"},
      {"h0", {"connection", "create", "--peer", "unix:///x\ny"}, 3, "INVALID_ARGUMENT",
       "peer_address: must not hold control characters"},
  };
  for (const auto& c : cases) {
    const Ctl r = lab.ctl(c.who, c.args);
    EXPECT_EQ(r.status, c.rc) << c.args[0] << " " << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.code), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.text), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_EQ(lab.ctl(c.who, {"status"}).status, 0) << "still serving after " << c.args[0];
  }
  // A peer that does not exist: the job fails with the reason, exit code 1.
  const Ctl dead = lab.ctl("h0", {"traffic", "run", "--peer", "unix:///nonexistent/metaroced.sock", "--iterations", "10"});
  EXPECT_EQ(dead.status, 1) << dead.err << dead.out;
  EXPECT_NE((dead.out + dead.err).find("nonexistent"), std::string::npos) << dead.out << dead.err;
  // Wrong or missing token.
  const Ctl none = lab.ctl("h0", {"status"}, false);
  EXPECT_EQ(none.status, 4) << none.err;
  EXPECT_NE(none.err.find("UNAUTHENTICATED"), std::string::npos) << none.err;
  Ctl wrong;
  {
    const auto r = ml::run_command({METAROCECTL_PATH, "--server", lab.server("h0"), "--token", "nope", "status"});
    wrong = {r.status, r.out, r.err};
  }
  EXPECT_EQ(wrong.status, 4);
  EXPECT_NE(wrong.err.find("UNAUTHENTICATED"), std::string::npos) << wrong.err;
  EXPECT_EQ(lab.ctl("h0", {"status"}).status, 0);
}

TEST(DaemonE2E, ShutdownDetachesXdpAndLeavesNoNamespace) {
  NEED_LAB();
  std::string name;
  {
    Lab lab;
    name = lab.name();
    const json r = lab.run_job({"--op", "write", "--size", "4K", "--iterations", "100"});
    EXPECT_EQ(r["state"], "JOB_STATE_DONE");
    // A job still running at shutdown is stopped and released.
    ASSERT_EQ(lab.ctl("h0", {"traffic", "start", "--peer", lab.server("h1"), "--duration", "60s"}).status, 0);
    for (const std::string& ns : std::vector<std::string>{ml::host_netns(name, 0), ml::fabric_netns(name)}) {
      const auto links = ml::run_command({"ip", "-n", ns, "-d", "link", "show"});
      EXPECT_NE(links.out.find("xdp"), std::string::npos) << ns << " has our XDP programs while running";
    }
    const auto rcs = lab.shutdown();
    for (const auto& [who, rc] : rcs) EXPECT_EQ(rc, 0) << who << " exit status\n" << lab.log(who);
    EXPECT_NE(lab.log("h0").find("final counters"), std::string::npos);
    EXPECT_NE(lab.log("h0").find("XDP programs detached"), std::string::npos);
    expect_no_xdp_program(name);
    EXPECT_FALSE(fs::exists(lab.dir() / "h0.sock")) << "socket file removed";
  }
  expect_no_namespace(name);
}

// Names of the daemon's threads (/proc/PID/task/*/comm), counted.
std::map<std::string, int> thread_names(pid_t pid) {
  std::map<std::string, int> names;
  std::error_code ec;
  for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::string comm;
    std::getline(std::ifstream(t.path() / "comm"), comm);
    ++names[comm];
  }
  return names;
}

// Role both in a lab: the fabric node runs on the endpoint's worker thread
// (one busy thread, not two), each role's ports sit in its own namespace, the
// fabric forwards and impairs both hosts' traffic, and shutdown detaches the
// XDP programs in both namespaces.
TEST(DaemonE2E, BothRolesInOneDaemonShareOneWorkerThread) {
  NEED_LAB();
  std::string name;
  {
    Lab lab(Lab::Layout::kFabricWithH0);
    name = lab.name();
    const Ctl st = lab.ctl("h0", {"-o", "json", "status"});
    ASSERT_EQ(st.status, 0) << st.err;
    EXPECT_EQ(st.j()["role"], "ROLE_BOTH");
    const auto threads = thread_names(lab.pid("h0"));
    EXPECT_EQ(threads.count("mr-endpt+fabric") ? threads.at("mr-endpt+fabric") : 0, 1) << lab.log("h0");
    EXPECT_EQ(threads.count("mr-fabric"), 0u) << "no thread of its own for the fabric node";
    EXPECT_EQ(threads.count("mr-endpoint"), 0u);
    for (const std::string& ns : std::vector<std::string>{ml::host_netns(name, 0), ml::fabric_netns(name)}) {
      const auto links = ml::run_command({"ip", "-n", ns, "-d", "link", "show"});
      EXPECT_NE(links.out.find("xdp"), std::string::npos) << ns << " holds that role's ports:\n" << links.out;
    }
    const json r = lab.run_job({"--op", "write", "--size", "16K", "--duration", "1s", "--paths", "4"});
    ASSERT_TRUE(r.is_object()) << lab.log("h0");
    EXPECT_EQ(r["state"], "JOB_STATE_DONE") << r.dump(2) << lab.log("h0");
    EXPECT_EQ(r["result"]["verification"], "passed");
    EXPECT_GT(num(r["result"]["retransmits"]), 0u) << "the shared fabric applies its 1% ECMP loss";
    const Ctl counters = lab.ctl("fab", {"-o", "json", "counters", "--filter", "link_packets_in"});
    ASSERT_EQ(counters.status, 0) << counters.err;
    EXPECT_NE(counters.out.find("link_packets_in"), std::string::npos) << counters.out;
    const auto rcs = lab.shutdown();
    for (const auto& [who, rc] : rcs) EXPECT_EQ(rc, 0) << who << " exit status\n" << lab.log(who);
    expect_no_xdp_program(name);
  }
  expect_no_namespace(name);
}

// Unprivileged: two daemons on the UDP datapath over loopback, controlled over
// TCP with TLS and a bearer token, plus the listening rules at start-up.
TEST(DaemonTls, TcpControlNeedsTlsAndTokenAndCarriesAJob) {
  if (ml::run_command({"openssl", "version"}).status != 0) GTEST_SKIP() << "needs openssl to make a test certificate";
  const fs::path dir = fs::temp_directory_path() / ("mrtls-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  ASSERT_EQ(ml::run_command({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                             "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key,
                             "-out", cert})
                .status,
            0);
  std::ofstream(dir / "token") << "tls-token-0123456789\n";
  const int base = 20000 + getpid() % 20000;
  // a's peers learn its address from --peer-host (as a pod's IP reaches it in deploy/k8s), b's from its config.
  auto write_cfg = [&](const std::string& name, int h, const std::string& extra) {
    std::ofstream(dir / (name + ".yaml"))
        << "name: " << name << "\nrole: endpoint\ncontrol:\n  unix_socket: \"\"\n  tcp: "
        << (h == 0 ? "localhost:" : "127.0.0.1:") << base + h  // a: every loopback address localhost resolves to
        << "\n  tls: {cert: cert.pem, key: key.pem}\n  token_file: token\n"
        << (h == 0 ? std::string() : "  peer_address: 127.0.0.1:" + std::to_string(base + h) + "\n")
        << "  peer_tls: {ca: cert.pem, server_name: localhost}\n"
        << "endpoint:\n  datapath: udp\n  interfaces: [lo]\n  address: " << daemon_test::loopback_ip(h) << "\n  udp_port: "
        << base + 100 << "\n  mac: 02:00:7f:00:00:0" << h + 1 << "\n" << extra;
  };
  write_cfg("a", 0, "");
  write_cfg("b", 1, "");
  // Start-up rules: plain TCP off loopback is refused; on loopback it needs --insecure.
  std::ofstream(dir / "open.yaml") << "role: endpoint\ncontrol: {unix_socket: \"\", tcp: 0.0.0.0:" << base + 7
                                   << "}\nendpoint: {datapath: udp, interfaces: [lo], address: 127.0.0.1, mac: 02:00:7f:00:00:01}\n";
  std::ofstream(dir / "plain.yaml") << "role: endpoint\ncontrol: {unix_socket: \"\", tcp: 127.0.0.1:" << base + 7
                                    << "}\nendpoint: {datapath: udp, interfaces: [lo], address: 127.0.0.1, mac: 02:00:7f:00:00:01}\n";
  std::ofstream(dir / "broken.yaml") << "role: endpoint\nendpoint:\n  datapath: afxdp\n  frame_size: lots\n";
  auto check = [&](const std::string& f, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {METAROCED_PATH, "--config", (dir / f).string(), "--check-config"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return ml::run_command(argv);
  };
  auto r = check("open.yaml");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("refusing plain TCP on the non-loopback address"), std::string::npos) << r.err;
  r = check("plain.yaml");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("needs TLS"), std::string::npos) << r.err;
  EXPECT_EQ(check("plain.yaml", {"--insecure"}).status, 0);
  // Usage errors exit 2, as --help says (CLI11's own codes are 105-109).
  EXPECT_EQ(check("plain.yaml", {"--no-such-flag"}).status, 2);
  EXPECT_EQ(check("plain.yaml", {"--log-level", "loud"}).status, 2);
  EXPECT_EQ(ml::run_command({METAROCED_PATH}).status, 2) << "--config is required";
  EXPECT_EQ(ml::run_command({METAROCED_PATH, "--help"}).status, 0);
  // --peer-host: the host with control.tcp's port is the address peers call back.
  r = check("a.yaml", {"--peer-host", "fd00::7"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("peer_address: \"[fd00::7]:" + std::to_string(base) + "\""), std::string::npos) << r.out;
  r = check("a.yaml", {"--peer-host", "10.0.0.7"});
  EXPECT_NE(r.out.find("peer_address: 10.0.0.7:" + std::to_string(base) + "\n"), std::string::npos) << r.out;
  r = check("a.yaml", {"--peer-host", "10.0.0.7:7443"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--peer-host: must be a host name, an IPv4 or an IPv6 address without a port"),
            std::string::npos)
      << r.err;
  std::ofstream(dir / "unix.yaml") << "role: endpoint\ncontrol: {unix_socket: " << (dir / "u.sock").string()
                                   << "}\nendpoint: {datapath: udp, interfaces: [lo], address: 127.0.0.1, mac: 02:00:7f:00:00:01}\n";
  r = check("unix.yaml", {"--peer-host", "10.0.0.7"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--peer-host: needs control.tcp"), std::string::npos) << r.err;
  r = check("broken.yaml");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("broken.yaml:4: endpoint.frame_size: must be an integer in [1024, 3840] (got 'lots')"),
            std::string::npos)
      << r.err;

  const pid_t a =
      spawn({METAROCED_PATH, "--config", (dir / "a.yaml").string(), "--peer-host", "127.0.0.1"}, (dir / "a.log").string());
  const pid_t b = spawn({METAROCED_PATH, "--config", (dir / "b.yaml").string()}, (dir / "b.log").string());
  auto ctl = [&](int h, std::vector<std::string> args, bool tls = true, const std::string& token = "tls-token-0123456789") {
    std::vector<std::string> argv = {METAROCECTL_PATH, "--server", "127.0.0.1:" + std::to_string(base + h)};
    if (tls) argv.insert(argv.end(), {"--tls", "--tls-ca", cert, "--tls-server-name", "localhost"});
    if (!token.empty()) argv.insert(argv.end(), {"--token", token});
    argv.insert(argv.end(), args.begin(), args.end());
    const auto res = ml::run_command(argv);
    return Ctl{res.status, res.out, res.err};
  };
  bool ready = false;
  for (int i = 0; i < 300 && !ready; ++i) {
    ready = ctl(0, {"status"}).status == 0 && ctl(1, {"status"}).status == 0;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(ready) << slurp((dir / "a.log").string()) << slurp((dir / "b.log").string());
  EXPECT_EQ(ctl(0, {"status"}, false).status, 4) << "plaintext to a TLS port";
  const Ctl no_token = ctl(0, {"status"}, true, "");
  EXPECT_EQ(no_token.status, 4);
  EXPECT_NE(no_token.err.find("UNAUTHENTICATED"), std::string::npos) << no_token.err;
  const Ctl info = ctl(0, {"-o", "json", "status"});
  EXPECT_EQ(info.j()["peer_address"], "127.0.0.1:" + std::to_string(base)) << info.out;
  // Found by name: localhost resolves to a's listener, whose certificate names localhost.
  const auto found = ml::run_command({METAROCECTL_PATH, "--tls", "--tls-ca", cert, "--token", "tls-token-0123456789",
                                      "-o", "json", "discover", "localhost:" + std::to_string(base)});
  ASSERT_EQ(found.status, 0) << found.err;
  const json daemons = json::parse(found.out)["daemons"];
  ASSERT_EQ(daemons.size(), 1u) << found.out;
  EXPECT_EQ(daemons[0]["name"], "a") << found.out;
  const std::string where = daemons[0]["address"];
  EXPECT_TRUE(where == "127.0.0.1:" + std::to_string(base) || where == "[::1]:" + std::to_string(base)) << found.out;
  const Ctl start = ctl(0, {"-o", "json", "traffic", "start", "--peer", "127.0.0.1:" + std::to_string(base + 1), "--op",
                            "send", "--size", "4K", "--iterations", "300"});
  ASSERT_EQ(start.status, 0) << start.err << slurp((dir / "a.log").string());
  const std::string id = std::to_string(num(start.j()["id"]));
  ctl(0, {"traffic", "watch", id});
  const json res = ctl(0, {"-o", "json", "traffic", "result", id}).j();
  EXPECT_EQ(res["state"], "JOB_STATE_DONE") << res.dump(2);
  EXPECT_TRUE(res["result"]["verified"].get<bool>()) << res["result"]["verification"];
  kill(a, SIGTERM);
  kill(b, SIGTERM);
  EXPECT_EQ(wait_exit(a, std::chrono::seconds(20)), 0) << slurp((dir / "a.log").string());
  EXPECT_EQ(wait_exit(b, std::chrono::seconds(20)), 0) << slurp((dir / "b.log").string());
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// Unprivileged: two daemons on the UDP datapath over loopback. Memory registered
// for callers is bounded by endpoint.memory_budget_bytes, and an accepted
// connection whose requester daemon died is released (issue 11, finding 4).
// Watch streams hold a server thread each (2,000 streams once used 2,014
// threads): at most kMaxWatchStreams (64) are open at once, the next is
// refused with RESOURCE_EXHAUSTED, the daemon's threads stay bounded, and a
// closed stream's slot is given back. UDP datapath on loopback: runs anywhere.
TEST(DaemonLimits, WatchStreamsAreBoundedAndTheirSlotsReturn) {
  const fs::path dir = fs::temp_directory_path() / ("mrwatch-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "w.yaml") << "name: w\nrole: endpoint\ncontrol:\n  unix_socket: " << (dir / "w.sock").string()
                                << "\nendpoint:\n  datapath: udp\n  interfaces: [lo]\n  address: " << daemon_test::loopback_ip(0) << "\n  udp_port: "
                                << 20000 + (getpid() + 104729) % 20000 << "\n  mac: 02:00:7f:00:00:01\n";
  const pid_t d = spawn({METAROCED_PATH, "--config", (dir / "w.yaml").string()}, (dir / "w.log").string());
  // A failed ASSERT returns early: the daemon and the directory go all the same.
  struct Cleanup {
    pid_t pid;
    fs::path dir;
    bool reaped = false;
    ~Cleanup() {
      if (!reaped) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{d, dir};
  const std::string addr = "unix://" + (dir / "w.sock").string();
  bool ready = false;
  for (int i = 0; i < 300 && !ready; ++i) {
    ready = ml::run_command({METAROCECTL_PATH, "--server", addr, "status"}).status == 0;
    if (!ready && waitpid(d, nullptr, WNOHANG) == d) break;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(ready) << slurp((dir / "w.log").string());
  auto threads = [&] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/" + std::to_string(d) + "/task")) ++n;
    return n;
  };
  const size_t threads_before = threads();
  auto stub = metaroce::v1::Daemon::NewStub(grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()));
  metaroce::v1::WatchRequest req;
  req.set_interval_ns(10'000'000'000);  // one event now, the next in 10 s: each stream stays open and idle
  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<metaroce::v1::WatchEvent>> reader;
  };
  // Opens a stream and reads its first event: true if the daemon took it.
  auto open = [&](Stream& s, grpc::Status* refused) {
    s.ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    s.reader = stub->Watch(&s.ctx, req);
    metaroce::v1::WatchEvent ev;
    if (s.reader->Read(&ev)) return true;
    *refused = s.reader->Finish();
    return false;
  };
  std::vector<std::unique_ptr<Stream>> held;
  grpc::Status status;
  for (int i = 0; i < 64; ++i) {
    held.push_back(std::make_unique<Stream>());
    ASSERT_TRUE(open(*held.back(), &status)) << "stream " << i << ": " << status.error_message();
  }
  Stream extra;
  ASSERT_FALSE(open(extra, &status)) << "a 65th stream was taken";
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(status.error_message(), "Watch: at most 64 streams may be open at once; close one first");
  // One server thread per held stream, plus at most 16 that gRPC's pool may
  // add around them; unbounded streams grew one thread each (2,000 -> 2,014).
  EXPECT_LE(threads(), threads_before + 64 + 16) << "before: " << threads_before;
  // Close them all; the daemon notices within its 50 ms cancellation check.
  for (auto& s : held) s->ctx.TryCancel();
  for (auto& s : held) s->reader->Finish();
  held.clear();
  bool reopened = false;
  for (int i = 0; i < 100 && !reopened; ++i) {
    Stream again;
    reopened = open(again, &status);
    if (reopened) again.ctx.TryCancel(), again.reader->Finish();
    else std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(reopened) << "the slots of closed streams came back: " << status.error_message();
  kill(d, SIGTERM);
  const int rc = wait_exit(d, std::chrono::seconds(30));
  cleanup.reaped = rc >= 0 || waitpid(d, nullptr, WNOHANG) < 0;  // < 0: already reaped (a signal)
  EXPECT_EQ(rc, 0) << slurp((dir / "w.log").string());
}

// Unprivileged: RoCEv2 between two daemons on the UDP datapath over loopback.
// RoCEv2 always goes to UDP 4791, so each endpoint listens on its address's
// 4791 besides its own port (before, such a daemon received no RoCEv2 packet
// and no RoCEv2 job between two of them could run). Every RoCEv2 verb's job
// is verified; a third daemon on a taken address is refused, naming the field.
TEST(DaemonUdp, RoceV2JobsBetweenTwoDaemonsAreVerified) {
  daemon_test::UdpDaemonPair pair(METAROCED_PATH, "mrroce", "");
  ASSERT_EQ(pair.wait_ready(), "");
  auto ctl = [&](const std::vector<std::string>& args) { return daemon_test::ctl_at(METAROCECTL_PATH, pair.address(0), args); };
  for (const char* op : {"write", "write_imm", "send"}) {
    const Ctl start = ctl({"-o", "json", "traffic", "start", "--peer", pair.address(1), "--transport", "rocev2", "--op",
                           op, "--size", "8K", "--iterations", "300"});
    ASSERT_EQ(start.status, 0) << op << ": " << start.err << pair.log(0);
    const std::string id = std::to_string(num(start.j()["id"]));
    ctl({"traffic", "watch", id});
    const json res = ctl({"-o", "json", "traffic", "result", id}).j();
    EXPECT_EQ(res["state"], "JOB_STATE_DONE") << op << ": " << res.dump(2) << pair.log(0) << pair.log(1);
    EXPECT_TRUE(res["result"]["verified"].get<bool>()) << op << ": " << res["result"]["verification"];
    EXPECT_EQ(num(res["result"]["bandwidth"][0]["iterations"]), 300u) << op;
  }
  const fs::path dir = fs::temp_directory_path() / ("mrroce-taken-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "c.yaml") << "name: c\nrole: endpoint\ncontrol:\n  unix_socket: " << (dir / "c.sock").string()
                                << "\nendpoint:\n  datapath: udp\n  interfaces: [lo]\n  address: "
                                << daemon_test::loopback_ip(0) << "\n  udp_port: " << pair.udp_port() + 1
                                << "\n  mac: 02:00:7f:00:00:03\n";
  const pid_t c = spawn({METAROCED_PATH, "--config", (dir / "c.yaml").string()}, (dir / "c.log").string());
  EXPECT_EQ(wait_exit(c, std::chrono::seconds(30)), 1) << slurp((dir / "c.log").string());
  EXPECT_NE(slurp((dir / "c.log").string())
                .find("endpoint.address: " + daemon_test::loopback_ip(0) + " cannot take RoCEv2's UDP port 4791 (bind " +
                      daemon_test::loopback_ip(0) + ":4791 failed: Address already in use)"),
            std::string::npos)
      << slurp((dir / "c.log").string());
  fs::remove_all(dir);
  EXPECT_EQ(pair.stop(), (std::vector<int>{0, 0})) << pair.log(0) << pair.log(1);
}

// SIGTERM stops a daemon promptly even while a job waits on a peer that is
// gone: the job's drain is cut short (a stop otherwise gives outstanding
// requests 30 s), so the daemon exits well inside a pod's default 30 s grace
// period instead of being killed with its ports and XDP programs attached.
// It took about a minute.
TEST(DaemonUdp, SigtermEndsAJobWhosePeerIsGoneWithinSeconds) {
  daemon_test::UdpDaemonPair pair(METAROCED_PATH, "mrterm", "");
  ASSERT_EQ(pair.wait_ready(), "");
  auto ctl = [&](const std::vector<std::string>& args) { return daemon_test::ctl_at(METAROCECTL_PATH, pair.address(0), args); };
  const Ctl start = ctl({"-o", "json", "traffic", "start", "--peer", pair.address(1), "--transport", "rocev2", "--size", "64K", "--duration",
                         "600s", "--interval", "100ms"});
  ASSERT_EQ(start.status, 0) << start.err << pair.log(0);
  const std::string id = std::to_string(num(start.j()["id"]));
  // Running once its peer has answered: frames came back to a.
  auto frames_in = [&] {
    const json j = ctl({"-o", "json", "counters"}).j();
    for (const auto& c : j["counters"])
      if (c["name"] == "endpoint_frames_in_total") return c["value"].get<double>();
    return 0.0;
  };
  bool moving = false;  // bounded: 20 s
  for (int i = 0; i < 200 && !moving; ++i) {
    moving = frames_in() > 100;
    if (!moving) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(moving) << ctl({"-o", "json", "traffic", "result", id}).out << pair.log(0);
  pair.kill_now(1);  // nothing it was sent is ever answered now
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = pair.terminate(0, std::chrono::seconds(25));
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(rc, 0) << "still running 25 s after SIGTERM (killed)\n" << pair.log(0);
  EXPECT_LT(took_s, 25.0);
  // The QP, its peer gone, would exhaust its retries only after 5-12 s: the job was cut short, and says so.
  EXPECT_NE(pair.log(0).find("outstanding requests did not complete within 2 s (daemon shutting down): abandoned"),
            std::string::npos)
      << pair.log(0);
  std::printf("SIGTERM to exit with a job whose peer is gone: %.1f s\n", took_s);
}

TEST(DaemonLimits, MemoryBudgetAndHalfOpenConnectionsExpire) {
  const fs::path dir = fs::temp_directory_path() / ("mrlim-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const int base = 20000 + (getpid() + 7919) % 20000;
  auto write_cfg = [&](const std::string& name, int h) {
    std::ofstream(dir / (name + ".yaml"))
        << "name: " << name << "\nrole: endpoint\ncontrol:\n  unix_socket: " << (dir / (name + ".sock")).string()
        << "\nendpoint:\n  datapath: udp\n  interfaces: [lo]\n  address: " << daemon_test::loopback_ip(h) << "\n  udp_port: " << base
        << "\n  mac: 02:00:7f:00:00:0" << h + 1 << "\n  memory_budget_bytes: 50331648\n  half_open_timeout_ns: 1s\n";
  };
  write_cfg("a", 0);
  write_cfg("b", 1);
  const pid_t a = spawn({METAROCED_PATH, "--config", (dir / "a.yaml").string()}, (dir / "a.log").string());
  const pid_t b = spawn({METAROCED_PATH, "--config", (dir / "b.yaml").string()}, (dir / "b.log").string());
  auto addr = [&](const std::string& n) { return "unix://" + (dir / (n + ".sock")).string(); };
  auto ctl = [&](const std::string& n, const std::vector<std::string>& args) {
    return daemon_test::ctl_at(METAROCECTL_PATH, addr(n), args);
  };
  auto gauge = [&](const std::string& n, const std::string& name) -> double {
    const json j = ctl(n, {"-o", "json", "counters"}).j();
    for (const auto& c : j["counters"])
      if (c["name"] == name) return c["value"].get<double>();
    return -1;
  };
  bool ready = false, exited = false;
  for (int i = 0; i < 300 && !ready && !exited; ++i) {
    ready = ctl("a", {"status"}).status == 0 && ctl("b", {"status"}).status == 0;
    exited = waitpid(a, nullptr, WNOHANG) == a || waitpid(b, nullptr, WNOHANG) == b;  // a bad config: stop waiting
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(ready) << slurp((dir / "a.log").string()) << slurp((dir / "b.log").string());
  EXPECT_EQ(gauge("b", "memory_budget_bytes"), 48.0 * (1 << 20));
  EXPECT_EQ(gauge("b", "memory_reserved_bytes"), 0.0);
  // The udp datapath's own counters are exported (-1: missing).
  EXPECT_EQ(gauge("b", "port_udp_entropy_fallback_total"), 0.0);
  EXPECT_EQ(gauge("b", "port_tx_dropped_total"), 0.0);

  // A 40 MiB region fits; a connection (a 32 MiB target region at the defaults) then does not.
  const Ctl reg = ctl("b", {"-o", "json", "memory", "register", "--length", "40M"});
  ASSERT_EQ(reg.status, 0) << reg.err;
  EXPECT_EQ(gauge("b", "memory_reserved_bytes"), 40.0 * (1 << 20));
  const Ctl refused = ctl("a", {"connection", "create", "--peer", addr("b")});
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find("RESOURCE_EXHAUSTED"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("endpoint.memory_budget_bytes"), std::string::npos) << refused.err;
  const Ctl again = ctl("b", {"memory", "register", "--length", "9M"});
  EXPECT_NE(again.err.find("endpoint.memory_budget_bytes"), std::string::npos) << again.err;
  ASSERT_EQ(ctl("b", {"memory", "deregister", std::to_string(num(reg.j()["key"]))}).status, 0);
  EXPECT_EQ(gauge("b", "memory_reserved_bytes"), 0.0);

  // With the region gone the connection fits; while its requester lives it stays.
  const Ctl created = ctl("a", {"connection", "create", "--peer", addr("b")});
  ASSERT_EQ(created.status, 0) << created.err;
  EXPECT_GT(gauge("b", "memory_reserved_bytes"), 32.0 * (1 << 20));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // two expiry checks: the requester answers
  EXPECT_EQ(ctl("b", {"-o", "json", "connection", "list"}).j()["connections"].size(), 1u);
  EXPECT_EQ(gauge("b", "connections_expired_total"), 0.0);

  // The requester dies without releasing: b asks, gets no answer for 1 s, and releases the half.
  kill(a, SIGKILL);
  waitpid(a, nullptr, 0);
  bool expired = false;
  for (int i = 0; i < 100 && !expired; ++i) {  // bounded: 10 s
    expired = gauge("b", "connections_expired_total") == 1.0;
    if (!expired) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(expired) << slurp((dir / "b.log").string());
  EXPECT_EQ(ctl("b", {"-o", "json", "connection", "list"}).j()["connections"].size(), 0u);
  EXPECT_EQ(gauge("b", "memory_reserved_bytes"), 0.0);
  EXPECT_NE(slurp((dir / "b.log").string()).find("half-open, released"), std::string::npos);
  kill(b, SIGTERM);
  waitpid(b, nullptr, 0);
  fs::remove_all(dir);
}

// What a daemon process holds: resident memory, threads and open descriptors.
struct ProcessUse {
  uint64_t rss_kib = 0;
  size_t threads = 0, fds = 0;
};
ProcessUse process_use(pid_t pid) {
  ProcessUse u;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) u.rss_kib = std::stoull(line.substr(6));
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec); !ec && it != fs::end(it); ++it)
    ++u.threads;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec); !ec && it != fs::end(it); ++it)
    ++u.fds;
  return u;
}

// What a daemon holds once it is idle. A control call that just returned can
// leave its server-side socket open for a moment (gRPC closes it on its poller
// thread), so a single reading may count one descriptor that is already going.
// Read until threads and descriptors agree five times in a row (bounded: 5 s).
ProcessUse settled_use(pid_t pid) {
  ProcessUse last = process_use(pid);
  for (int same = 0, i = 0; same < 5 && i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const ProcessUse now = process_use(pid);
    same = (now.fds == last.fds && now.threads == last.threads) ? same + 1 : 0;
    last = now;
  }
  return last;
}

// Soak (issue 11): a verified WRITE job at 5% loss on every link while plane 1
// flaps (down 500 ms of every 3 s), for METAROCE_SOAK_SECONDS (default 40; CI
// runs the default, set it to 600 for a long soak). Zero data errors; after the
// job every daemon holds the threads and descriptors it held before it (after a
// first short job); resident memory flat between 5 s into the job and its last
// seconds (after warm-up).
TEST(DaemonSoak, LossAndFlapsForMinutesLeakNothing) {
  NEED_LAB();
  const char* env = std::getenv("METAROCE_SOAK_SECONDS");
  const int seconds = env ? std::max(10, std::atoi(env)) : 40;
  std::string name;
  {
    // Accepted connections are checked with their requester every 5 s, so the
    // first job below makes that check (and opens the channel it keeps to the
    // peer daemon) before the baseline is taken; with the default 60 s it
    // first ran a minute into a long soak and looked like a leaked socket.
    Lab lab(Lab::Layout::kSeparate, "  half_open_timeout_ns: 5s\n");
    name = lab.name();
    ASSERT_EQ(lab.ctl("fab", {"fabric", "set", "--loss", "5%"}).status, 0);
    ASSERT_EQ(lab.ctl("fab", {"fabric", "set", "--plane", "1", "--flap-period", "3s", "--flap-down", "500ms"}).status, 0);
    std::map<std::string, ProcessUse> idle_before, warm, late, idle_after;
    const std::vector<std::string> who = {"h0", "h1", "fab"};
    // A short job first: what the first job creates once and keeps (the channels
    // between the daemons, both ways, gRPC's pollers) is not a leak; growth per
    // job would be. It outlasts one half-open check period.
    const Ctl first = lab.ctl("h0", {"traffic", "run", "--peer", lab.server("h1"), "--op", "write", "--size", "16K",
                                     "--paths", "4", "--duration", "7s"});
    ASSERT_EQ(first.status, 0) << first.err;
    for (const auto& w : who) idle_before[w] = settled_use(lab.pid(w));
    const Ctl start = lab.ctl("h0", {"-o", "json", "traffic", "start", "--peer", lab.server("h1"), "--op", "write",
                                     "--size", "16K", "--paths", "4", "--duration", std::to_string(seconds) + "s"});
    ASSERT_EQ(start.status, 0) << start.err;
    const std::string id = std::to_string(num(start.j()["id"]));
    // Sampling instants are the test's own clock; the job's state is what is checked.
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_until(t0 + std::chrono::seconds(5));
    for (const auto& w : who) warm[w] = process_use(lab.pid(w));
    std::this_thread::sleep_until(t0 + std::chrono::seconds(seconds - 3));
    for (const auto& w : who) late[w] = process_use(lab.pid(w));
    lab.ctl("h0", {"traffic", "watch", id});
    const json r = lab.ctl("h0", {"-o", "json", "traffic", "result", id}).j();
    EXPECT_EQ(r["state"], "JOB_STATE_DONE") << r.dump(2).substr(0, 2000);
    EXPECT_TRUE(r["result"]["verified"].get<bool>()) << r["result"]["verification"];
    EXPECT_GT(num(r["result"]["retransmits"]), 0u) << "5% loss must have cost retransmissions";
    EXPECT_GT(num(r["result"]["path_state_changes"]), 0u) << "plane 1 flapped under the job";
    for (const auto& w : who) idle_after[w] = settled_use(lab.pid(w));
    for (const auto& w : who) {
      EXPECT_EQ(idle_after[w].threads, idle_before[w].threads) << w << ": threads before and after the job";
      EXPECT_EQ(idle_after[w].fds, idle_before[w].fds) << w << ": descriptors before and after the job";
      // Flat after warm-up: at most 8 MiB or 10% more in the job's last seconds than 5 s in.
      // Not judged under AddressSanitizer: its quarantine keeps freed memory resident by design.
  #if !defined(__SANITIZE_ADDRESS__)
      const uint64_t allowance = std::max<uint64_t>(8 << 10, warm[w].rss_kib / 10);
      EXPECT_LE(late[w].rss_kib, warm[w].rss_kib + allowance)
          << w << ": resident memory grew from " << warm[w].rss_kib << " KiB to " << late[w].rss_kib << " KiB";
  #endif
      std::printf("soak %s: %d s, RSS %llu KiB at 5 s, %llu KiB at %d s; threads %zu -> %zu; fds %zu -> %zu\n", w.c_str(),
                  seconds, static_cast<unsigned long long>(warm[w].rss_kib),
                  static_cast<unsigned long long>(late[w].rss_kib), seconds - 3, idle_before[w].threads,
                  idle_after[w].threads, idle_before[w].fds, idle_after[w].fds);
    }
    std::printf("soak job: %s, retransmits %llu, path state changes %llu\n",
                r["result"]["verification"].get<std::string>().c_str(),
                static_cast<unsigned long long>(num(r["result"]["retransmits"])),
                static_cast<unsigned long long>(num(r["result"]["path_state_changes"])));
    // Nothing outlives the soak: the daemons exit cleanly and detach their XDP
    // programs, and the lab's namespaces go with the lab.
    for (const auto& [w, rc] : lab.shutdown()) EXPECT_EQ(rc, 0) << w << " exit status\n" << lab.log(w);
    expect_no_xdp_program(name);
  }
  expect_no_namespace(name);
}

// gRPC bad-input sweep (issue 11), unprivileged: one endpoint daemon on the UDP
// datapath over loopback, with a token. Every method, every field, hostile values.
// An unprivileged endpoint daemon (UDP datapath on loopback) in dir, with a
// bearer token; returns its pid once it answers (-1 if it did not start).
pid_t start_udp_daemon(const fs::path& dir, const std::string& token, std::string* addr) {
  fs::create_directories(dir);
  const int port = 20000 + (getpid() + 104729) % 20000;
  std::ofstream(dir / "token") << token << "\n";
  std::ofstream(dir / "d.yaml") << "name: d\nrole: endpoint\ncontrol:\n  unix_socket: " << (dir / "d.sock").string()
                                << "\n  token_file: token\nendpoint:\n  datapath: udp\n  interfaces: [lo]\n"
                                << "  address: " << daemon_test::loopback_ip(0) << "\n  udp_port: " << port
                                << "\n  mac: 02:00:7f:00:00:01\n";
  const pid_t d = spawn({METAROCED_PATH, "--config", (dir / "d.yaml").string()}, (dir / "d.log").string());
  *addr = "unix://" + (dir / "d.sock").string();
  for (int i = 0; i < 300; ++i) {
    if (ml::run_command({METAROCECTL_PATH, "--server", *addr, "--token", token, "status"}).status == 0) return d;
    if (waitpid(d, nullptr, WNOHANG) == d) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(d, SIGTERM);
  wait_exit(d, std::chrono::seconds(30));
  return -1;
}

TEST(DaemonSweep, EveryMethodAndFieldWithHostileValues) {
  const fs::path dir = fs::temp_directory_path() / ("mrsweep-" + std::to_string(getpid()));
  setenv("METAROCE_CAPTURE_DIR", (dir / "captures").c_str(), 1);  // a capture the sweep may start stays in dir
  std::string addr;
  const pid_t d = start_udp_daemon(dir, "sweep-token-0123456789", &addr);
  ASSERT_GT(d, 0) << slurp((dir / "d.log").string());
  const daemon_test::SweepResult r = daemon_test::sweep_every_method(addr, "sweep-token-0123456789");
  std::string codes;
  for (const auto& [code, n] : r.codes) codes += " " + code + ":" + std::to_string(n);
  std::printf("sweep: %zu calls; status codes (code:calls):%s; an undecodable request gets %s\n", r.calls,
              codes.c_str(), r.undecodable_message.c_str());
  EXPECT_GT(r.calls, 200u);
  for (const auto& p : r.problems) ADD_FAILURE() << p;
  EXPECT_EQ(waitpid(d, nullptr, WNOHANG), 0) << "the daemon is still running\n" << slurp((dir / "d.log").string());
  kill(d, SIGTERM);
  EXPECT_EQ(wait_exit(d, std::chrono::seconds(30)), 0) << slurp((dir / "d.log").string());
  fs::remove_all(dir);
}

// Per-path source ports (ECMP entropy), which the live scenario runner sets so
// that flows sit on the ECMP links the simulator puts them on: checked field
// by field, and used as given. Unprivileged (UDP datapath on loopback; the
// daemon connects to itself).
TEST(DaemonRequests, PathSourcePortsAreCheckedAndUsed) {
  const fs::path dir = fs::temp_directory_path() / ("mrports-" + std::to_string(getpid()));
  const std::string token = "ports-token-0123456789";
  std::string addr;
  const pid_t d = start_udp_daemon(dir, token, &addr);
  ASSERT_GT(d, 0) << slurp((dir / "d.log").string());
  // Stopped however the test ends (an ASSERT returns early).
  struct Stop {
    pid_t pid;
    fs::path dir;
    ~Stop() {
      kill(pid, SIGTERM);
      const int rc = wait_exit(pid, std::chrono::seconds(30));
      EXPECT_EQ(rc, 0) << slurp((dir / "d.log").string());
      fs::remove_all(dir);
    }
  } stop{d, dir};
  auto channel = grpc::CreateChannel(addr, grpc::InsecureChannelCredentials());
  auto traffic = metaroce::v1::Traffic::NewStub(channel);
  auto conns = metaroce::v1::Connections::NewStub(channel);
  auto ctx = [&](grpc::ClientContext* c) {
    c->AddMetadata("authorization", "Bearer " + token);
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  };
  auto start = [&](const metaroce::v1::JobSpec& spec) {
    grpc::ClientContext c;
    ctx(&c);
    metaroce::v1::StartJobRequest req;
    *req.mutable_spec() = spec;
    metaroce::v1::JobInfo info;
    return traffic->Start(&c, req, &info);
  };
  metaroce::v1::JobSpec spec;
  spec.set_operation(metaroce::v1::OPERATION_WRITE);
  spec.add_peers(addr);
  spec.add_message_bytes(4096);
  spec.set_connections(2);
  spec.mutable_params()->set_paths(3);
  spec.set_iterations(10);
  for (uint32_t p : {50000u, 50001u, 50002u, 50003u, 50004u}) spec.add_path_src_ports(p);  // one short
  grpc::Status st = start(spec);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message().rfind("spec.path_src_ports: one port per path of every connection: peers x connections x "
                                     "paths = 6 (got 5)", 0), 0u) << st.error_message();
  spec.add_path_src_ports(80);
  st = start(spec);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "spec.path_src_ports[5]: must be in [1024, 65535] (got 80)");

  // A connection with its own ports: refused with a wrong count, used as given otherwise.
  metaroce::v1::CreateConnectionRequest create;
  create.set_peer_address(addr);
  create.mutable_params()->set_paths(2);
  create.mutable_params()->add_path_src_ports(51000);
  metaroce::v1::ConnectionInfo info;
  {
    grpc::ClientContext c;
    ctx(&c);
    st = conns->Create(&c, create, &info);
  }
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message().rfind("params.path_src_ports: one port per path: 2 (got 1)", 0), 0u) << st.error_message();
  create.mutable_params()->add_path_src_ports(61234);
  {
    grpc::ClientContext c;
    ctx(&c);
    st = conns->Create(&c, create, &info);
  }
  ASSERT_TRUE(st.ok()) << st.error_message();
  {
    grpc::ClientContext c;
    ctx(&c);
    metaroce::v1::GetConnectionRequest get;
    get.set_id(info.id());
    st = conns->Get(&c, get, &info);
  }
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(info.paths_size(), 2);
  EXPECT_EQ(info.paths(0).src_port(), 51000u);
  EXPECT_EQ(info.paths(1).src_port(), 61234u);
}

// The same sweep on a lab (root): the fabric daemon's Fabric service and an
// AF_XDP endpoint, each still serving afterwards.
TEST(DaemonSweep, FabricAndAfXdpEndpointInALab) {
  NEED_LAB();
  const fs::path captures = fs::temp_directory_path() / ("mrsweepcap-" + std::to_string(getpid()));
  setenv("METAROCE_CAPTURE_DIR", captures.c_str(), 1);
  Lab lab;
  for (const char* who : {"fab", "h0"}) {
    const daemon_test::SweepResult r = daemon_test::sweep_every_method(lab.server(who), lab.token());
    std::string codes;
    for (const auto& [code, n] : r.codes) codes += " " + code + ":" + std::to_string(n);
    std::printf("sweep %s: %zu calls; status codes (code:calls):%s\n", who, r.calls, codes.c_str());
    for (const auto& a : r.accepted) std::printf("  accepted: %s\n", a.c_str());
    EXPECT_GT(r.calls, 200u) << who;
    for (const auto& p : r.problems) ADD_FAILURE() << who << ": " << p;
    EXPECT_EQ(lab.ctl(who, {"status"}).status, 0) << who << " still serving";
  }
  std::error_code ec;
  fs::remove_all(captures, ec);
}
