// metarocectl capture start|stop|status: a bounded pcapng capture on a
// daemon's workers (Capture service), and its registration (add_capture_commands).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "capture_files.h"
#include "client.h"
#include "metaroce/capture/limits.h"
#include "commands.h"
#include "units.h"

namespace v1 = metaroce::v1;

namespace metarocectl {
namespace {

struct CaptureFlags {
  std::string file;
  std::uint32_t ring = 0;
  std::string ring_file_bytes;
  std::uint64_t ring_file_packets = 0;
  std::string fetch_to;
  std::vector<std::uint32_t> planes;
  std::vector<std::string> points;
  std::uint32_t udp_port = 0, connection = 0, snap_length = 0;
  std::uint64_t packets = 0;
  std::string bytes, duration;
  bool wait = false;
};

v1::CapturePoint parse_point(const std::string& p) {
  if (p == "endpoint-rx") return v1::CAPTURE_POINT_ENDPOINT_RX;
  if (p == "endpoint-tx") return v1::CAPTURE_POINT_ENDPOINT_TX;
  if (p == "fabric-in") return v1::CAPTURE_POINT_FABRIC_IN;
  if (p == "fabric-out") return v1::CAPTURE_POINT_FABRIC_OUT;
  return v1::CAPTURE_POINT_FABRIC_DROPPED;  // CLI11 checked the set
}

int show(Invocation& inv, const v1::CaptureInfo& info) {
  if (inv.json) {
    print_json(info);
    return kExitOk;
  }
  if (info.path().empty()) {
    print("capture: none since the daemon started\n");
    return kExitOk;
  }
  print(fmt::format("capture {}: {}\n  {} packets ({} bytes) written in {:.2f} s; {} not written (writer behind or disk);"
                    " {} cut to the snap length; {} filtered out\n",
                    info.running() ? "running" : "ended (" + info.stop_reason() + ")", info.path(), info.packets_written(),
                    info.bytes_written(), info.elapsed_s(), info.packets_not_written(), info.packets_truncated(),
                    info.packets_filtered_out()));
  if (info.spec().ring_files() > 0) {
    std::string files;
    for (const std::string& f : info.files()) files += (files.empty() ? "" : " ") + f;
    print(fmt::format("  ring of {} files: {} kept ({}), {} removed\n", info.spec().ring_files(), info.files_size(), files,
                      info.files_removed()));
  }
  return kExitOk;
}

int cmd_capture_start(Invocation& inv, const CaptureFlags& f) {
  v1::StartCaptureRequest req;
  v1::CaptureSpec& spec = *req.mutable_spec();
  spec.set_file(f.file);
  for (std::uint32_t p : f.planes) spec.add_planes(p);
  for (const std::string& p : f.points) spec.add_points(parse_point(p));
  spec.set_udp_port(f.udp_port);
  spec.set_connection(f.connection);
  spec.set_snap_length(f.snap_length);
  spec.set_max_packets(f.packets);
  if (!f.bytes.empty()) spec.set_max_bytes(parse_size_bytes("--bytes", f.bytes));
  if (!f.duration.empty()) spec.set_max_duration_ns(static_cast<std::uint64_t>(parse_duration_ns("--duration", f.duration)));
  spec.set_ring_files(f.ring);
  if (!f.ring_file_bytes.empty()) spec.set_ring_file_bytes(parse_size_bytes("--ring-file-bytes", f.ring_file_bytes));
  spec.set_ring_file_packets(f.ring_file_packets);
  if (f.ring == 0 && (spec.ring_file_bytes() || spec.ring_file_packets()))
    throw UsageError("--ring-file-bytes and --ring-file-packets: only with --ring N (a ring of N files)");
  if (f.ring > 0 && spec.ring_file_bytes() == 0 && spec.ring_file_packets() == 0)
    throw UsageError("--ring: give each file a size: --ring-file-bytes and/or --ring-file-packets");
  if (f.ring == 0 && spec.max_packets() == 0 && spec.max_bytes() == 0 && spec.max_duration_ns() == 0)
    throw UsageError("give at least one bound: --packets, --bytes or --duration (or a ring of files: --ring)");
  Client& c = inv.client();
  v1::CaptureInfo info = c.call<v1::CaptureInfo>("Capture.Start", [&](auto* ctx, auto* r) { return c.capture().Start(ctx, req, r); });
  if (f.wait) {
    // Polls the daemon until the capture reaches a bound; Ctrl-C stops it.
    std::atomic<bool> interrupted{false};
    interrupts::Scope on_interrupt([&] { interrupted = true; });
    while (info.running()) {
      if (interrupted) {
        info = c.call<v1::CaptureInfo>("Capture.Stop", [&](auto* ctx, auto* r) { return c.capture().Stop(ctx, {}, r); });
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      info = c.call<v1::CaptureInfo>("Capture.Get", [&](auto* ctx, auto* r) { return c.capture().Get(ctx, {}, r); });
    }
  }
  return show(inv, info);
}

}  // namespace

void add_capture_commands(CLI::App& app, Context& ctx) {
  Invocation& inv = ctx.inv;
  Commands& commands = ctx.commands;
  CLI::App* capture = commands.group(&app, "capture", "pcapng captures on a daemon's workers",
                                     "metarocectl capture start --file pf.pcapng --duration 2s --wait");
  CaptureFlags& f = ctx.keep<CaptureFlags>();
  CLI::App* start = commands.add(
      capture, "start", "start a bounded capture into the daemon's capture directory",
      "metarocectl --server unix:///run/metaroce/fab.sock capture start --file plane1.pcapng --plane 1 "
      "--point fabric-dropped --packets 1000 --wait",
      [&inv, &f] { return cmd_capture_start(inv, f); });
  start->add_option("--file", f.file, "file name (letters, digits, . _ -; ends in .pcapng)")->required();
  start->add_option("--plane", f.planes, "plane to capture (repeat; default: every plane)");
  start->add_option("--point", f.points, "capture point (repeat; default: every point of the daemon's roles)")
      ->check(CLI::IsMember({"endpoint-rx", "endpoint-tx", "fabric-in", "fabric-out", "fabric-dropped"}));
  start->add_option("--udp-port", f.udp_port, "only UDP frames with this source or destination port")
      ->check(CLI::Range(1u, 65535u));
  start->add_option("--connection", f.connection, "only this MetaRoCE connection id (either end) or RoCEv2 QP");
  start->add_option("--snaplen", f.snap_length,
                    fmt::format("bytes kept per frame, {}..{} (default: whole frames)", metaroce::capture::kMinSnapLength,
                                metaroce::capture::kMaxSnapLength));
  start->add_option("--packets", f.packets, "stop after this many packets");
  start->add_option("--bytes", f.bytes, "stop after this many file bytes, e.g. 100M");
  start->add_option("--duration", f.duration, "stop after this long, e.g. 2s");
  start->add_flag("--wait", f.wait, "wait until the capture ends and print its summary");
  start->add_option("--ring", f.ring,
                    fmt::format("a ring of N files for long runs, {}..{}: FILE-00001.pcapng, -00002, ...; the oldest is "
                                "removed (no other bound needed)",
                                metaroce::capture::kMinRingFiles, metaroce::capture::kMaxRingFiles))
      ->check(CLI::Range(metaroce::capture::kMinRingFiles, metaroce::capture::kMaxRingFiles));
  start->add_option("--ring-file-bytes", f.ring_file_bytes, "with --ring: start the next file at this many bytes (64K..64G)");
  start->add_option("--ring-file-packets", f.ring_file_packets, "with --ring: start the next file at this many packets")
      ->check(CLI::Range(std::uint64_t{1}, metaroce::capture::kMaxRingFilePackets));
  commands.add(capture, "stop", "stop the running capture", "metarocectl capture stop", [&inv] {
    Client& c = inv.client();
    return show(inv, c.call<v1::CaptureInfo>("Capture.Stop", [&](auto* ctx, auto* r) { return c.capture().Stop(ctx, {}, r); }));
  });
  CLI::App* fetch = commands.add(
      capture, "fetch", "copy a capture file from the daemon's capture directory (it may be on another machine)",
      "metarocectl --server 10.0.0.5:7443 --tls capture fetch --file plane1.pcapng --to plane1.pcapng",
      [&inv, &f] {
        Client& c = inv.client();
        const std::string to = f.fetch_to.empty() ? f.file : f.fetch_to;
        const std::uint64_t bytes = fetch_capture_file(c, f.file, to);
        if (inv.json) print(nlohmann::json{{"file", to}, {"bytes", bytes}}.dump() + "\n");
        else print(fmt::format("{}: {} bytes\n", to, bytes));
        return kExitOk;
      });
  fetch->add_option("--file", f.file, "the daemon's file (a capture's file, or one of its ring files)")->required();
  fetch->add_option("--to", f.fetch_to, "local path (default: the same name here)");
  commands.add(capture, "status", "the running or last capture", "metarocectl capture status", [&inv] {
    Client& c = inv.client();
    return show(inv, c.call<v1::CaptureInfo>("Capture.Get", [&](auto* ctx, auto* r) { return c.capture().Get(ctx, {}, r); }));
  });
}

}  // namespace metarocectl
