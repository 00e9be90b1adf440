// metarocectl commands about the daemon itself: status, config, port list,
// counters and watch (the stream of counters and job progress), and their
// registration on the CLI11 app (add_status_commands).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "client.h"
#include "commands.h"
#include "discover.h"
#include "render.h"
#include "units.h"

namespace v1 = metaroce::v1;

namespace metarocectl {
namespace {

std::string format_uptime(std::int64_t ns) {
  std::int64_t s = ns / 1'000'000'000;
  const std::int64_t days = s / 86400, hours = s / 3600 % 24, minutes = s / 60 % 60, seconds = s % 60;
  if (days > 0) return fmt::format("{}d {}h {}m {}s", days, hours, minutes, seconds);
  if (hours > 0) return fmt::format("{}h {}m {}s", hours, minutes, seconds);
  if (minutes > 0) return fmt::format("{}m {}s", minutes, seconds);
  return format_duration_ns(ns);
}

std::string role_name(v1::Role role) {
  switch (role) {
    case v1::ROLE_ENDPOINT: return "endpoint";
    case v1::ROLE_FABRIC: return "fabric";
    case v1::ROLE_BOTH: return "endpoint+fabric";
    default: return "unspecified";
  }
}

std::string format_counter_value(double value) {
  if (value == static_cast<double>(static_cast<std::int64_t>(value)) && std::abs(value) < 1e15)
    return fmt::format("{}", static_cast<std::int64_t>(value));
  return fmt::format("{:g}", value);
}

std::string format_labels(const google::protobuf::Map<std::string, std::string>& labels) {
  // protobuf maps are unordered: sort for stable output.
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  std::string out;
  for (const auto& [key, value] : sorted) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}=\"{}\"", key, value);
  }
  return out;
}

// ---- daemon -----------------------------------------------------------------

int cmd_status(Invocation& inv) {
  Client& c = inv.client();
  const auto info = c.call<v1::DaemonInfo>(
      "Daemon.GetInfo", [&](auto* ctx, auto* r) { return c.daemon().GetInfo(ctx, v1::GetInfoRequest{}, r); });
  if (inv.json) {
    print_json(info);
    return kExitOk;
  }
  print(render_key_values({
      {"server", c.address()},
      {"name", info.name()},
      {"version", info.version()},
      {"role", role_name(info.role())},
      {"uptime", format_uptime(info.uptime_ns())},
      {"port kinds", join(info.port_kinds(), ", ")},
      {"endpoint", info.endpoint_address().empty()
                       ? std::string("-")
                       : fmt::format("{} ({})", info.endpoint_address(), info.endpoint_mac())},
      {"planes", fmt::format("{}", info.planes())},
      {"connections", info.max_connections() ? fmt::format("{} of {}", info.connections(), info.max_connections())
                                              : fmt::format("{}", info.connections())},
      {"connection state", info.connections() ? fmt::format("{} bytes ({} per connection)", info.connection_state_bytes(),
                                                            info.connection_state_bytes() / info.connections())
                                              : fmt::format("{} bytes", info.connection_state_bytes())},
      {"jobs running", fmt::format("{}", info.jobs_running())},
      {"peer address", info.peer_address().empty() ? std::string("-") : info.peer_address()},
  }));
  return kExitOk;
}

// Every daemon behind a DNS name (a headless Service), with its name. Exit 4
// when none answers.
int cmd_discover(Invocation& inv, const std::string& service_text) {
  const ServiceAddress service = parse_service_address("discover", service_text);
  const std::vector<FoundDaemon> found = discover_daemons(service, inv.client_options);
  size_t answered = 0;
  nlohmann::json list = nlohmann::json::array();
  Table table({"name", "role", "address", "endpoint", "version", "error"});
  for (const FoundDaemon& d : found) {
    const bool ok = d.error.empty();
    answered += ok ? 1 : 0;
    const std::string endpoint =
        !ok || d.info.endpoint_address().empty() ? "-" : fmt::format("{} ({})", d.info.endpoint_address(), d.info.endpoint_mac());
    list.push_back({{"address", d.address},
                    {"name", ok ? d.info.name() : ""},
                    {"role", ok ? role_name(d.info.role()) : ""},
                    {"endpoint_address", ok ? d.info.endpoint_address() : ""},
                    {"version", ok ? d.info.version() : ""},
                    {"error", d.error}});
    table.add_row({ok ? d.info.name() : "-", ok ? role_name(d.info.role()) : "-", d.address, endpoint,
                   ok ? d.info.version() : "-", ok ? "-" : d.error});
  }
  if (inv.json) {
    print(nlohmann::json{{"service", service_text}, {"daemons", list}}.dump(2));
  } else {
    print(table.render());
  }
  if (answered == 0) {
    std::fprintf(stderr, "metarocectl: discover: no daemon behind %s answered\n", service_text.c_str());
    return kExitUnreachable;
  }
  return kExitOk;
}

int cmd_config(Invocation& inv) {
  Client& c = inv.client();
  const auto config = c.call<v1::DaemonConfig>(
      "Daemon.GetConfig", [&](auto* ctx, auto* r) { return c.daemon().GetConfig(ctx, v1::GetConfigRequest{}, r); });
  if (!inv.json) {
    print(config.yaml());
    return kExitOk;
  }
  // The daemon's JSON text, pretty-printed; printed as is if it does not parse.
  const nlohmann::json parsed = nlohmann::json::parse(config.json(), nullptr, /*allow_exceptions=*/false);
  print(parsed.is_discarded() ? config.json() : parsed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  return kExitOk;
}

int cmd_port_list(Invocation& inv) {
  Client& c = inv.client();
  const auto ports = c.call<v1::ListPortsResponse>(
      "Daemon.ListPorts", [&](auto* ctx, auto* r) { return c.daemon().ListPorts(ctx, v1::ListPortsRequest{}, r); });
  if (inv.json) {
    print_json(ports);
    return kExitOk;
  }
  Table table({"name", "kind", "interface", "plane", "host", "use", "rx frames", "rx bytes", "tx frames",
               "tx bytes", "tx ring full", "rx dropped", "rx truncated", "wakeups"});
  table.right_align({3, 4, 6, 7, 8, 9, 10, 11, 12, 13});
  for (const v1::PortInfo& p : ports.ports()) {
    table.add_row({p.name(), p.kind(), p.interface().empty() ? "-" : p.interface(),
                   fmt::format("{}", p.plane()), p.host() < 0 ? "-" : fmt::format("{}", p.host()), p.use(),
                   fmt::format("{}", p.rx_frames()), fmt::format("{}", p.rx_bytes()),
                   fmt::format("{}", p.tx_frames()), fmt::format("{}", p.tx_bytes()),
                   fmt::format("{}", p.tx_ring_full()), fmt::format("{}", p.rx_dropped()),
                   fmt::format("{}", p.rx_truncated()), fmt::format("{}", p.wakeups())});
  }
  print(table.render());
  return kExitOk;
}

int cmd_counters(Invocation& inv, const std::string& filter) {
  Client& c = inv.client();
  const auto all = c.call<v1::Counters>(
      "Daemon.GetCounters", [&](auto* ctx, auto* r) { return c.daemon().GetCounters(ctx, v1::GetCountersRequest{}, r); });
  v1::Counters shown;
  shown.set_time_ns(all.time_ns());
  for (const v1::Counter& counter : all.counters()) {
    const std::string labels = format_labels(counter.labels());
    if (filter.empty() || counter.name().find(filter) != std::string::npos ||
        labels.find(filter) != std::string::npos) {
      *shown.add_counters() = counter;
    }
  }
  if (inv.json) {
    print_json(shown);
    return kExitOk;
  }
  Table table({"name", "labels", "value"});
  table.right_align({2});
  for (const v1::Counter& counter : shown.counters())
    table.add_row({counter.name(), format_labels(counter.labels()), format_counter_value(counter.value())});
  print(table.render());
  return kExitOk;
}

struct WatchFlags {
  std::string interval = "1s";
  bool counters = false;
  std::uint64_t count = 0;
  std::vector<std::uint64_t> job_ids;
};

int cmd_watch(Invocation& inv, const WatchFlags& flags) {
  v1::WatchRequest request;
  request.set_interval_ns(parse_duration_ns("--interval", flags.interval));
  request.set_counters(flags.counters);
  for (std::uint64_t id : flags.job_ids) request.add_job_ids(id);

  Client& c = inv.client();
  grpc::ClientContext context;
  c.prepare(context, /*streaming=*/true);
  std::atomic<bool> we_cancelled{false};
  interrupts::Scope on_interrupt([&] {
    we_cancelled = true;
    context.TryCancel();
  });
  auto reader = c.daemon().Watch(&context, request);
  v1::WatchEvent event;
  std::uint64_t events = 0;
  while (reader->Read(&event)) {
    ++events;
    if (inv.json) {
      print(to_json(event, /*pretty=*/false));  // NDJSON: one event per line
    } else {
      std::string line = fmt::format("{:>9.2f} s  jobs {}", static_cast<double>(event.time_ns()) / 1e9,
                                     event.jobs_size());
      for (const v1::JobProgress& p : event.jobs()) {
        line += fmt::format("  [job {} {}] {} {:.2f} Mpps retx {} loss {:.2f}%", p.job_id(),
                            job_state_name(p.state()), format_gbps(p.goodput_bps()), p.packet_rate() / 1e6,
                            p.retransmits(), p.loss_seen() * 100.0);
      }
      if (flags.counters) line += fmt::format("  counters {}", event.counters().counters_size());
      print(line);
      if (flags.counters) {
        for (const v1::Counter& counter : event.counters().counters()) {
          print(fmt::format("    {}{{{}}} {}", counter.name(), format_labels(counter.labels()),
                            format_counter_value(counter.value())));
        }
      }
    }
    if (flags.count > 0 && events >= flags.count) {
      we_cancelled = true;
      context.TryCancel();
      break;
    }
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok() && !(we_cancelled && status.error_code() == grpc::StatusCode::CANCELLED))
    throw RpcError("Daemon.Watch", status);
  return kExitOk;
}

}  // namespace

void add_status_commands(CLI::App& app, Context& ctx) {
  Invocation& inv = ctx.inv;
  Commands& commands = ctx.commands;

  // Daemon
  commands.add(&app, "status", "name, version, role, uptime and counts of the daemon", "metarocectl status",
               [&inv] { return cmd_status(inv); });
  std::string& discover_service = ctx.keep<std::string>();
  CLI::App* discover = commands.add(
      &app, "discover", "every daemon behind a DNS name (e.g. a headless Service) and its name",
      "metarocectl --tls --tls-ca ca.crt discover metaroce-endpoint:7443",
      [&inv, &discover_service] { return cmd_discover(inv, discover_service); });
  discover->add_option("service", discover_service, "NAME:PORT; NAME resolves to one address per daemon")->required();
  discover->footer(discover->get_footer() + R"(

Each address NAME resolves to (one address family: the resolver's first) is
asked for its daemon's name. With --tls and no --tls-server-name, every daemon
must present a certificate for NAME (the Service's name, which a certificate
can carry; pod IPs it cannot). Exit 4 when none answers; one that does not
answer is listed with its error.)");
  commands.add(&app, "config", "the daemon's effective configuration (YAML; JSON with -o json)",
               "metarocectl config -o json", [&inv] { return cmd_config(inv); });
  CLI::App* port = commands.group(&app, "port", "datapath ports", "metarocectl port list");
  commands.add(port, "list", "datapath ports and their counters", "metarocectl port list",
               [&inv] { return cmd_port_list(inv); });
  std::string& counter_filter = ctx.keep<std::string>();
  commands.add(&app, "counters", "every counter of the daemon (name, labels, value)",
               "metarocectl counters --filter port_rx",
               [&inv, &counter_filter] { return cmd_counters(inv, counter_filter); })
      ->add_option("--filter", counter_filter, "only counters whose name or labels contain this text");
  WatchFlags& watch_flags = ctx.keep<WatchFlags>();
  CLI::App* watch = commands.add(&app, "watch", "stream counters and job progress (Ctrl-C to stop)",
                                 "metarocectl watch --interval 500ms --count 10",
                                 [&inv, &watch_flags] { return cmd_watch(inv, watch_flags); });
  watch->add_option("--interval", watch_flags.interval, "time between events, [10ms, 60s]")->capture_default_str();
  watch->add_flag("--counters", watch_flags.counters, "include every counter in each event");
  watch->add_option("--count", watch_flags.count, "stop after this many events (0 = until Ctrl-C)");
  watch->add_option("--job", watch_flags.job_ids, "follow only this job (repeatable; default: all running)");
}

}  // namespace metarocectl
