// metarocectl traffic run/start/watch/stop/result/list: job specs and
// patterns, following jobs' progress streams, the final reports, and the
// registration of the `traffic` noun (add_traffic_commands).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client.h"
#include "metaroce/api/operation_codec.h"
#include "metaroce/transport/connection_params.h"
#include "commands.h"
#include "render.h"
#include "units.h"

namespace v1 = metaroce::v1;

namespace metarocectl {
namespace {

// ---- traffic ----------------------------------------------------------------

struct TrafficFlags {
  std::vector<std::string> peers;
  std::string pattern;
  std::string hosts;
  bool bidirectional = false;
  std::string op = "write";
  std::string size, sizes, size_sweep;
  std::uint32_t connections = static_cast<std::uint32_t>(metaroce::transport::kParamJobConnections.default_value);
  ConnectionFlags connection;
  std::string duration;
  std::uint64_t iterations = 0;
  std::string interval;
  bool no_verify = false;
  std::uint64_t seed = 0;
};

v1::Operation parse_operation(const std::string& op) {
  if (const auto parsed = metaroce::transport::parse_operation(op)) return metaroce::api::encode_operation(*parsed);
  throw UsageError(fmt::format("--op: unknown operation (allowed: {}; got \"{}\")",
                               metaroce::transport::operation_names(", "), op));
}

// Everything of the JobSpec except the peers.
v1::JobSpec build_job_spec(const TrafficFlags& f) {
  v1::JobSpec spec;
  spec.set_operation(parse_operation(f.op));
  const bool atomic = metaroce::transport::is_atomic(*metaroce::api::decode_operation(spec.operation()));
  std::vector<std::uint32_t> sizes;
  if (!f.size.empty()) sizes = parse_size_list("--size", f.size);
  else if (!f.sizes.empty()) sizes = parse_size_list("--sizes", f.sizes);
  else if (!f.size_sweep.empty()) sizes = parse_size_sweep("--size-sweep", f.size_sweep);
  else sizes = {atomic ? 8u : 65536u};  // perftest's default size; atomics are 8 bytes
  if (!f.size.empty() && sizes.size() != 1) throw UsageError("--size: one size (use --sizes for a list)");
  for (std::uint32_t s : sizes) spec.add_message_bytes(s);
  if (!metaroce::transport::kParamJobConnections.accepts(f.connections))
    throw UsageError(metaroce::transport::kParamJobConnections.refusal("--connections", f.connections));
  spec.set_connections(f.connections);
  *spec.mutable_params() = build_params(f.connection);
  // Sizes above the 1 MiB default need a larger max message on both halves.
  const std::uint32_t largest = *std::max_element(sizes.begin(), sizes.end());
  if (f.connection.max_message.empty() && largest > (1u << 20)) spec.mutable_params()->set_max_message_bytes(largest);
  if (!f.duration.empty()) spec.set_duration_ns(parse_duration_ns("--duration", f.duration));
  spec.set_iterations(f.iterations);
  if (!f.interval.empty()) spec.set_interval_ns(parse_duration_ns("--interval", f.interval));
  spec.set_no_verify(f.no_verify);
  spec.set_seed(f.seed);
  return spec;
}

struct PlannedJob {
  std::string server;              // daemon that runs the job
  std::vector<std::string> peers;  // as the operator wrote them
};

std::vector<PlannedJob> plan_jobs(const TrafficFlags& f, const std::string& server) {
  if (f.pattern.empty()) {
    if (!f.hosts.empty()) throw UsageError("--hosts: needs --pattern");
    if (f.bidirectional) throw UsageError("--bidirectional: needs --pattern one-to-one");
    if (f.peers.empty()) throw UsageError("traffic: give --peer ADDR (repeatable) or --pattern with --hosts");
    return {PlannedJob{server, f.peers}};
  }
  if (!f.peers.empty()) throw UsageError("--peer and --pattern: give one or the other");
  const std::vector<std::string> hosts = split_list(f.hosts);
  if (hosts.size() < 2) {
    throw UsageError(fmt::format("--hosts: --pattern {} needs at least two daemon addresses (got \"{}\")", f.pattern,
                                 f.hosts));
  }
  if (f.bidirectional && f.pattern != "one-to-one") throw UsageError("--bidirectional: only with --pattern one-to-one");
  std::vector<PlannedJob> jobs;
  if (f.pattern == "one-to-one") {
    if (hosts.size() != 2) {
      throw UsageError(fmt::format("--hosts: --pattern one-to-one takes exactly two addresses (got {})", hosts.size()));
    }
    jobs.push_back({hosts[0], {hosts[1]}});
    if (f.bidirectional) jobs.push_back({hosts[1], {hosts[0]}});
  } else if (f.pattern == "incast") {
    for (std::size_t i = 1; i < hosts.size(); ++i) jobs.push_back({hosts[i], {hosts[0]}});
  } else if (f.pattern == "all-to-all") {
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      PlannedJob job{hosts[i], {}};
      for (std::size_t j = 0; j < hosts.size(); ++j)
        if (j != i) job.peers.push_back(hosts[j]);
      jobs.push_back(std::move(job));
    }
  } else {
    throw UsageError(fmt::format("--pattern: unknown pattern (allowed: one-to-one, incast, all-to-all; got \"{}\")",
                                 f.pattern));
  }
  return jobs;
}

// One job on one daemon, from Start to its final JobInfo.
struct RunningJob {
  std::unique_ptr<Client> client;
  std::uint64_t id = 0;
  std::string label;  // "job 3" or "job 3 on host:port"
  bool sweeps = false;
  v1::JobInfo final_info;
  bool have_final = false;
  std::optional<RpcError> error;  // Watch or Get failed
  bool detached = false;          // the watch was cancelled on request
  std::unique_ptr<grpc::ClientContext> watch_context;
  double latest_fraction = 0, latest_goodput_bps = 0;
};

void stop_job_quietly(RunningJob& job) {
  v1::StopJobRequest request;
  request.set_id(job.id);
  try {
    job.client->call<v1::JobInfo>("Traffic.Stop",
                                  [&](auto* ctx, auto* r) { return job.client->traffic().Stop(ctx, request, r); });
  } catch (const RpcError& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
}

void label_jobs(std::vector<RunningJob>& jobs) {
  bool one_server = true;
  for (const RunningJob& job : jobs) one_server = one_server && job.client->address() == jobs[0].client->address();
  for (RunningJob& job : jobs)
    job.label = one_server ? fmt::format("job {}", job.id) : fmt::format("job {} on {}", job.id, job.client->address());
}

enum class WatchMode {
  kRun,    // we started the jobs: Ctrl-C stops them, STOPPED is a failure
  kAttach  // `traffic watch`: Ctrl-C detaches, the job keeps running
};

// Follows every job's Watch stream concurrently, printing progress, then
// fetches each final JobInfo.
void watch_jobs(Invocation& inv, std::vector<RunningJob>& jobs, WatchMode mode) {
  ProgressDisplay display(stdout, stderr, ::isatty(STDERR_FILENO) == 1);
  std::mutex mutex;  // display and the latest_* fields
  interrupts::set_last_words([&] { display.finish(); });

  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  bool stop_requested = false, watching_done = false;
  std::atomic<bool> detaching{false};
  // Ctrl-C: in run mode a stopper thread asks every daemon to stop its job
  // (the signal thread must not block on RPCs); in attach mode we detach.
  interrupts::Scope on_interrupt([&] {
    if (mode == WatchMode::kRun) {
      std::fprintf(stderr, "\nmetarocectl: stopping %zu job%s (Ctrl-C again to quit at once)\n", jobs.size(),
                   jobs.size() == 1 ? "" : "s");
      std::lock_guard lock(stop_mutex);
      stop_requested = true;
      stop_cv.notify_all();
    } else {
      detaching = true;
      for (RunningJob& job : jobs) job.watch_context->TryCancel();
    }
  });
  std::thread stopper([&] {
    std::unique_lock lock(stop_mutex);
    stop_cv.wait(lock, [&] { return stop_requested || watching_done; });
    if (!stop_requested) return;
    lock.unlock();
    for (RunningJob& job : jobs) stop_job_quietly(job);
  });

  auto on_progress = [&](RunningJob& job, const v1::JobProgress& p) {
    std::lock_guard lock(mutex);
    // The last event may be a zero-length marker that only carries the result.
    const bool final_marker = p.has_result() && p.end_ns() <= p.start_ns();
    job.latest_fraction = p.fraction_done();
    if (!final_marker) job.latest_goodput_bps = p.goodput_bps();
    if (display.bar_enabled()) {
      double fraction = 0, goodput = 0;
      for (const RunningJob& j : jobs) {
        fraction += j.latest_fraction;
        goodput += j.latest_goodput_bps;
      }
      fraction /= static_cast<double>(jobs.size());
      display.set_bar(format_progress_bar(
          fraction, 30,
          jobs.size() == 1 ? format_gbps(goodput) : fmt::format("{}  {} jobs", format_gbps(goodput), jobs.size())));
    }
    if (inv.json) display.line(to_json(p, /*pretty=*/false));
    else if (!final_marker) display.line(format_progress_line(p, job.label, job.sweeps));
    else display.bar();
  };

  std::vector<std::thread> watchers;
  for (RunningJob& job : jobs) {
    job.watch_context = std::make_unique<grpc::ClientContext>();
    job.client->prepare(*job.watch_context, /*streaming=*/true);
  }
  for (RunningJob& job : jobs) {
    watchers.emplace_back([&, &job = job] {
      v1::WatchJobRequest request;
      request.set_id(job.id);
      auto reader = job.client->traffic().Watch(job.watch_context.get(), request);
      v1::JobProgress progress;
      while (reader->Read(&progress)) on_progress(job, progress);
      grpc::Status status = reader->Finish();
      if (detaching && status.error_code() == grpc::StatusCode::CANCELLED) {
        job.detached = true;
      } else if (!status.ok()) {
        job.error.emplace("Traffic.Watch", std::move(status));
      }
    });
  }
  for (std::thread& t : watchers) t.join();
  {
    std::lock_guard lock(stop_mutex);
    watching_done = true;
    stop_cv.notify_all();
  }
  stopper.join();
  display.finish();
  interrupts::set_last_words(nullptr);

  for (RunningJob& job : jobs) {
    if (job.error || job.detached) continue;
    v1::GetJobRequest request;
    request.set_id(job.id);
    try {
      job.final_info = job.client->call<v1::JobInfo>(
          "Traffic.Get", [&](auto* ctx, auto* r) { return job.client->traffic().Get(ctx, request, r); });
      job.have_final = true;
    } catch (RpcError& e) {
      job.error.emplace(e);
    }
  }
}

bool job_failed(const v1::JobInfo& info, WatchMode mode) {
  switch (info.state()) {
    case v1::JOB_STATE_FAILED: return true;
    case v1::JOB_STATE_STOPPED: return mode == WatchMode::kRun;
    case v1::JOB_STATE_DONE:
      // DONE should imply verified; check anyway so a mismatch is never exit 0.
      return !info.spec().no_verify() && !info.result().verified();
    default: return false;
  }
}

// Prints the final tables (or JSON lines) and returns the exit code.
int report_jobs(Invocation& inv, std::vector<RunningJob>& jobs, WatchMode mode) {
  int exit_code = kExitOk;
  bool any_failed = false;
  std::map<std::uint32_t, double> aggregate_by_size;
  double aggregate_bps = 0;
  int finished = 0;
  for (RunningJob& job : jobs) {
    if (job.detached) {
      std::fprintf(stderr, "metarocectl: detached from %s (it keeps running)\n", job.label.c_str());
      continue;
    }
    if (job.error) {
      std::fprintf(stderr, "%s\n", job.error->what());
      if (exit_code == kExitOk) exit_code = job.error->exit_code();
      continue;
    }
    const v1::JobInfo& info = job.final_info;
    any_failed = any_failed || job_failed(info, mode);
    ++finished;
    aggregate_bps += job_average_goodput_bps(info.result());
    for (const v1::BandwidthRow& row : info.result().bandwidth())
      aggregate_by_size[row.message_bytes()] += row.average_bps();
    if (inv.json) {
      print(to_json(info, /*pretty=*/false));  // the stream stays NDJSON
      continue;
    }
    if (jobs.size() > 1) {
      print(fmt::format("\n=== {} -> {} ===", job.label, fmt::join(info.spec().peers(), ", ")));
    } else {
      print("");
    }
    print(render_job_report(info));
  }
  if (!inv.json && finished > 1) {
    if (aggregate_by_size.size() > 1) {
      Table table({"#bytes", "aggregate BW average[Gb/sec]"});
      table.right_align({0, 1});
      for (const auto& [bytes, bps] : aggregate_by_size)
        table.add_row({fmt::format("{}", bytes), fmt::format("{:.2f}", bps / 1e9)});
      print("");
      print(table.render());
    }
    print(fmt::format("\naggregate goodput: {} over {} jobs", format_gbps(aggregate_bps), finished));
  }
  if (exit_code != kExitOk) return exit_code;
  return any_failed ? kExitResultFailed : kExitOk;
}

int cmd_traffic_start(Invocation& inv, const TrafficFlags& f, bool run) {
  const v1::JobSpec base = build_job_spec(f);
  const std::vector<PlannedJob> plan = plan_jobs(f, inv.flags.server);
  std::vector<RunningJob> jobs;
  for (const PlannedJob& planned : plan) {
    RunningJob job;
    job.client = inv.client_for(planned.server);
    job.sweeps = base.message_bytes_size() > 1;
    v1::StartJobRequest request;
    *request.mutable_spec() = base;
    for (const std::string& peer : planned.peers) request.mutable_spec()->add_peers(peer);
    try {
      const auto info = job.client->call<v1::JobInfo>(
          "Traffic.Start", [&](auto* ctx, auto* r) { return job.client->traffic().Start(ctx, request, r); });
      job.id = info.id();
      job.final_info = info;
    } catch (const RpcError&) {
      // All or nothing: a half-started pattern would skew every figure.
      for (RunningJob& started : jobs) stop_job_quietly(started);
      throw;
    }
    jobs.push_back(std::move(job));
  }
  label_jobs(jobs);
  if (!run) {
    if (inv.json) {
      for (const RunningJob& job : jobs) print(to_json(job.final_info, /*pretty=*/jobs.size() == 1));
    } else if (f.pattern.empty()) {
      for (const RunningJob& job : jobs) print(fmt::format("{}", job.id));
    } else {
      for (const RunningJob& job : jobs) print(fmt::format("{} {}", job.id, job.client->address()));
    }
    return kExitOk;
  }
  watch_jobs(inv, jobs, WatchMode::kRun);
  return report_jobs(inv, jobs, WatchMode::kRun);
}

int cmd_traffic_watch(Invocation& inv, std::uint64_t id) {
  std::vector<RunningJob> jobs(1);
  jobs[0].client = inv.client_for(inv.flags.server);
  jobs[0].id = id;
  // Whether the job sweeps sizes decides the progress line's size column.
  v1::GetJobRequest request;
  request.set_id(id);
  const auto info = jobs[0].client->call<v1::JobInfo>(
      "Traffic.Get", [&](auto* ctx, auto* r) { return jobs[0].client->traffic().Get(ctx, request, r); });
  jobs[0].sweeps = info.spec().message_bytes_size() > 1;
  label_jobs(jobs);
  watch_jobs(inv, jobs, WatchMode::kAttach);
  return report_jobs(inv, jobs, WatchMode::kAttach);
}

int print_job(Invocation& inv, const v1::JobInfo& info, WatchMode mode) {
  if (inv.json) print_json(info);
  else print(render_job_report(info));
  return job_failed(info, mode) ? kExitResultFailed : kExitOk;
}

int cmd_traffic_stop(Invocation& inv, std::uint64_t id) {
  v1::StopJobRequest request;
  request.set_id(id);
  Client& c = inv.client();
  const auto info = c.call<v1::JobInfo>("Traffic.Stop",
                                        [&](auto* ctx, auto* r) { return c.traffic().Stop(ctx, request, r); });
  if (inv.json) {
    print_json(info);
    return kExitOk;
  }
  print(render_job_report(info));
  return kExitOk;  // stopping was what was asked for
}

int cmd_traffic_result(Invocation& inv, std::uint64_t id) {
  v1::GetJobRequest request;
  request.set_id(id);
  Client& c = inv.client();
  const auto info = c.call<v1::JobInfo>("Traffic.Get",
                                        [&](auto* ctx, auto* r) { return c.traffic().Get(ctx, request, r); });
  return print_job(inv, info, WatchMode::kAttach);
}

int cmd_traffic_list(Invocation& inv) {
  Client& c = inv.client();
  const auto list = c.call<v1::ListJobsResponse>(
      "Traffic.List", [&](auto* ctx, auto* r) { return c.traffic().List(ctx, v1::ListJobsRequest{}, r); });
  if (inv.json) {
    print_json(list);
    return kExitOk;
  }
  Table table({"id", "state", "op", "peers", "sizes", "connections", "elapsed", "goodput", "verification", "error"});
  table.right_align({0, 5, 6, 7});
  for (const v1::JobInfo& job : list.jobs()) {
    std::vector<std::string> sizes;
    for (std::uint32_t s : job.spec().message_bytes()) sizes.push_back(format_size(s));
    const bool finished = job.state() == v1::JOB_STATE_DONE || job.state() == v1::JOB_STATE_FAILED ||
                          job.state() == v1::JOB_STATE_STOPPED;
    table.add_row({fmt::format("{}", job.id()), job_state_name(job.state()), operation_name(job.spec().operation()),
                   join(job.spec().peers(), ","), fmt::format("{}", fmt::join(sizes, ",")),
                   fmt::format("{}", job.connections_size()), format_duration_ns(job.elapsed_ns()),
                   finished ? format_gbps(job_average_goodput_bps(job.result())) : "-",
                   job.result().verification().empty() ? "-" : job.result().verification(),
                   job.error().empty() ? "" : job.error()});
  }
  print(table.render());
  return kExitOk;
}

}  // namespace

void add_traffic_commands(CLI::App& app, Context& ctx) {
  Invocation& inv = ctx.inv;
  Commands& commands = ctx.commands;

  // Traffic
  CLI::App* traffic = commands.group(&app, "traffic", "perftest-style traffic jobs",
                                     "metarocectl traffic run --peer unix:///run/metaroce/h2.sock --duration 5s");
  // run and start get their own flag storage: CLI11 options point into it.
  TrafficFlags& run_flags = ctx.keep<TrafficFlags>();
  TrafficFlags& start_flags = ctx.keep<TrafficFlags>();
  auto add_traffic_flags = [&](CLI::App* sub, TrafficFlags& tf) {
    sub->add_option("--peer", tf.peers, "target daemon address (repeatable)")->group("Targets");
    sub->add_option("--pattern", tf.pattern, "one-to-one | incast | all-to-all (with --hosts; ignores --server)")
        ->check(CLI::IsMember({"one-to-one", "incast", "all-to-all"}))
        ->group("Targets");
    sub->add_option("--hosts", tf.hosts, "daemon addresses for --pattern, comma-separated")->group("Targets");
    sub->add_flag("--bidirectional", tf.bidirectional, "one-to-one: also run hosts[1] -> hosts[0]")
        ->group("Targets");
    sub->add_option("--op", tf.op, metaroce::transport::operation_names(" | "))
        ->check(CLI::IsMember(metaroce::transport::operation_name_list()))
        ->capture_default_str();
    CLI::Option* size = sub->add_option("--size", tf.size, "message size, e.g. 64K (default 64K; atomics 8)");
    CLI::Option* sizes = sub->add_option("--sizes", tf.sizes, "sizes run in order, e.g. 64,4K,64K");
    CLI::Option* sweep = sub->add_option("--size-sweep", tf.size_sweep, "MIN:MAX, powers of two, e.g. 2:8M");
    size->excludes(sizes)->excludes(sweep);
    sizes->excludes(sweep);
    sub->add_option("--connections", tf.connections,
                    "connections to each peer (a job holds this x its peers; each counts against both daemons' "
                    "endpoint.max_connections), " + metaroce::transport::kParamJobConnections.range_text())
        ->capture_default_str();
    add_connection_flags(sub, tf.connection);
    CLI::Option* duration = sub->add_option("--duration", tf.duration, "per size, e.g. 10s (default 5s)");
    sub->add_option("--iterations", tf.iterations, "messages per size and connection")->excludes(duration);
    sub->add_option("--interval", tf.interval, "progress interval, e.g. 1s");
    sub->add_flag("--no-verify", tf.no_verify, "skip data verification");
    sub->add_option("--seed", tf.seed, "data pattern seed (0 = random, reported)");
  };
  CLI::App* traffic_run = commands.add(
      traffic, "run", "start a job and follow it to the end (Ctrl-C stops it)",
      "metarocectl traffic run --pattern incast --hosts unix:///run/metaroce/h1.sock,unix:///run/metaroce/h2.sock,"
      "unix:///run/metaroce/h3.sock --sizes 4K,64K --duration 5s",
      [&inv, &run_flags] { return cmd_traffic_start(inv, run_flags, /*run=*/true); });
  add_traffic_flags(traffic_run, run_flags);
  traffic_run->footer(traffic_run->get_footer() + R"(

Output: a line per interval per job, then perftest-style tables and a summary
(with --pattern: a section per job and the aggregate goodput). With -o json:
each JobProgress as one JSON line, then each final JobInfo as one JSON line.
Patterns: one-to-one runs on hosts[0] to hosts[1]; incast on every other host
to hosts[0]; all-to-all on every host to all others. Each job runs on its
source host's daemon, whose peers are the other addresses as given.
Defaults sent when a flag is absent: 64K messages (atomics 8), 1 connection
per peer, 4 paths, 1 stream, queue depth 16; the daemon runs 5 s per size.)");
  CLI::App* traffic_start = commands.add(
      traffic, "start", "start a job and print its id",
      "metarocectl traffic start --peer unix:///run/metaroce/h2.sock --op read --size 4K --iterations 100000",
      [&inv, &start_flags] { return cmd_traffic_start(inv, start_flags, /*run=*/false); });
  add_traffic_flags(traffic_start, start_flags);
  traffic_start->footer(traffic_start->get_footer() + R"(

Output: the job id (with --pattern: "<id> <daemon address>" per job); with
-o json the JobInfo (one JSON line per job when there are several).)");
  std::uint64_t& job_id = ctx.keep<std::uint64_t>();
  commands.add(traffic, "watch", "follow a running job to its end (Ctrl-C detaches)", "metarocectl traffic watch 3",
               [&inv, &job_id] { return cmd_traffic_watch(inv, job_id); })
      ->add_option("id", job_id, "job id")
      ->required();
  commands.add(traffic, "stop", "stop a job early (it still reports results)", "metarocectl traffic stop 3",
               [&inv, &job_id] { return cmd_traffic_stop(inv, job_id); })
      ->add_option("id", job_id, "job id")
      ->required();
  commands.add(traffic, "result", "a job's result tables", "metarocectl traffic result 3",
               [&inv, &job_id] { return cmd_traffic_result(inv, job_id); })
      ->add_option("id", job_id, "job id")
      ->required();
  commands.add(traffic, "list", "jobs of this daemon", "metarocectl traffic list",
               [&inv] { return cmd_traffic_list(inv); });
}

}  // namespace metarocectl
