// metarocectl: the operator's CLI for metaroced (gRPC API metaroce.v1).
//
// This file wires CLI11 subcommands to RPCs; parsing of units and fabric
// flags, rendering and the gRPC plumbing live in the metarocectl_core library.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client.h"
#include "fabric_args.h"
#include "render.h"
#include "scenario_cmd.h"
#include "units.h"

namespace v1 = metaroce::v1;

namespace metarocectl {
namespace {

// ---- shared state of one invocation -----------------------------------------

struct GlobalFlags {
  std::string server{kDefaultServer};
  std::string token;
  std::string token_file;
  bool tls = false;
  std::string tls_ca, tls_cert, tls_key, tls_server_name;
  std::string output = "table";
  std::string timeout = "10s";
};

class Invocation {
 public:
  GlobalFlags flags;
  ClientOptions client_options;
  bool json = false;

  // Turns the global flags into client options (after parsing).
  void resolve(CLI::Option* token_option) {
    json = flags.output == "json";
    client_options.timeout_ns = parse_duration_ns("--timeout", flags.timeout);
    client_options.tls = flags.tls;
    client_options.tls_ca_file = flags.tls_ca;
    client_options.tls_cert_file = flags.tls_cert;
    client_options.tls_key_file = flags.tls_key;
    client_options.tls_server_name = flags.tls_server_name;
    // Precedence: --token, then --token-file, then $METAROCE_TOKEN.
    if (token_option->count() > 0) {
      client_options.token = flags.token;
    } else if (!flags.token_file.empty()) {
      client_options.token = read_token_file(flags.token_file);
    } else if (const char* env = std::getenv("METAROCE_TOKEN"); env != nullptr) {
      client_options.token = env;
    }
    if (!flags.tls_cert.empty() != !flags.tls_key.empty()) {
      throw UsageError("--tls-cert and --tls-key: give both or neither");
    }
  }

  // The client of --server, created on first use.
  Client& client() {
    if (!client_) client_ = std::make_unique<Client>(flags.server, client_options);
    return *client_;
  }
  std::unique_ptr<Client> client_for(const std::string& address) const {
    return std::make_unique<Client>(address, client_options);
  }

 private:
  std::unique_ptr<Client> client_;
};

void print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
  std::fflush(stdout);
}

void print_json(const google::protobuf::Message& message) { print(to_json(message, true)); }

std::string format_uptime(std::int64_t ns) {
  std::int64_t s = ns / 1'000'000'000;
  const std::int64_t days = s / 86400, hours = s / 3600 % 24, minutes = s / 60 % 60, seconds = s % 60;
  if (days > 0) return fmt::format("{}d {}h {}m {}s", days, hours, minutes, seconds);
  if (hours > 0) return fmt::format("{}h {}m {}s", hours, minutes, seconds);
  if (minutes > 0) return fmt::format("{}m {}s", minutes, seconds);
  return format_duration_ns(ns);
}

std::string join(const google::protobuf::RepeatedPtrField<std::string>& items, std::string_view sep) {
  return fmt::format("{}", fmt::join(items.begin(), items.end(), sep));
}

std::string role_name(v1::Role role) {
  switch (role) {
    case v1::ROLE_ENDPOINT: return "endpoint";
    case v1::ROLE_FABRIC: return "fabric";
    case v1::ROLE_BOTH: return "endpoint+fabric";
    default: return "unspecified";
  }
}

std::string transport_name(v1::Transport transport) {
  return transport == v1::TRANSPORT_ROCEV2 ? "rocev2" : "metaroce";
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
      {"connections", fmt::format("{}", info.connections())},
      {"jobs running", fmt::format("{}", info.jobs_running())},
      {"peer address", info.peer_address().empty() ? std::string("-") : info.peer_address()},
  }));
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
  print(parsed.is_discarded() ? config.json() : parsed.dump(2));
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

// ---- connections ------------------------------------------------------------

struct ConnectionFlags {
  std::string transport = "metaroce";
  std::uint32_t paths = 0, streams = 0, queue_depth = 0;
  std::string mtu, max_message, min_rto;
  std::uint32_t first_plane = 0;
  CLI::Option* paths_option = nullptr;
  CLI::Option* streams_option = nullptr;
  CLI::Option* queue_depth_option = nullptr;
};

// Defaults sent when a flag is absent: the proto gives no "0 = default" for
// these, so the CLI says what it wants explicitly.
constexpr std::uint32_t kDefaultPaths = 4;
constexpr std::uint32_t kDefaultStreams = 1;
constexpr std::uint32_t kDefaultQueueDepth = 16;

v1::ConnectionParams build_params(const ConnectionFlags& f) {
  v1::ConnectionParams params;
  const bool rocev2 = f.transport == "rocev2";
  params.set_transport(rocev2 ? v1::TRANSPORT_ROCEV2 : v1::TRANSPORT_METAROCE);
  params.set_paths(f.paths_option->count() > 0 ? f.paths : (rocev2 ? 1 : kDefaultPaths));
  params.set_streams(f.streams_option->count() > 0 ? f.streams : kDefaultStreams);
  params.set_queue_depth(f.queue_depth_option->count() > 0 ? f.queue_depth : kDefaultQueueDepth);
  auto size32 = [](std::string_view flag, const std::string& text) {
    const std::uint64_t bytes = parse_size_bytes(flag, text);
    if (bytes > UINT32_MAX) throw UsageError(fmt::format("{}: too large (got \"{}\")", flag, text));
    return static_cast<std::uint32_t>(bytes);
  };
  if (!f.mtu.empty()) params.set_mtu_payload_bytes(size32("--mtu", f.mtu));
  if (!f.max_message.empty()) params.set_max_message_bytes(size32("--max-message", f.max_message));
  if (!f.min_rto.empty()) params.set_min_rto_ns(parse_duration_ns("--min-rto", f.min_rto));
  params.set_first_plane(f.first_plane);
  return params;
}

void add_connection_flags(CLI::App* sub, ConnectionFlags& f) {
  sub->add_option("--transport", f.transport, "metaroce (multipath) or rocev2 (go-back-N baseline)")
      ->check(CLI::IsMember({"metaroce", "rocev2"}))
      ->capture_default_str();
  f.paths_option = sub->add_option("--paths", f.paths, "paths, [1, 64] (default 4; rocev2: 1)");
  f.streams_option = sub->add_option("--streams", f.streams, "ordered streams, [1, 256] (default 1)");
  f.queue_depth_option =
      sub->add_option("--queue-depth", f.queue_depth, "outstanding requests per stream, [1, 1024] (default 16)");
  sub->add_option("--mtu", f.mtu, "payload bytes per packet, [256, 8192] (default: the daemon's)");
  sub->add_option("--max-message", f.max_message, "largest message, e.g. 4M (default 1M)");
  sub->add_option("--min-rto", f.min_rto, "minimum retransmission timeout, e.g. 200us");
  sub->add_option("--first-plane", f.first_plane, "plane of path 0; path i uses (first-plane + i) % planes");
}

std::string describe_peer(const v1::ConnectionInfo& info) {
  std::vector<std::string> details;
  if (!info.peer_name().empty()) details.push_back(info.peer_name());
  if (!info.peer_endpoint().empty()) details.push_back("endpoint " + info.peer_endpoint());
  details.push_back(fmt::format("remote id {}", info.remote_id()));
  return fmt::format("{} ({})", info.peer_address(), fmt::join(details, ", "));
}

std::string render_connection(const v1::ConnectionInfo& info) {
  const v1::ConnectionParams& p = info.params();
  std::string out = render_key_values({
      {"id", fmt::format("{}", info.id())},
      {"role", info.role()},
      {"peer", describe_peer(info)},
      {"transport", transport_name(p.transport())},
      {"paths / streams / queue depth", fmt::format("{} / {} / {}", p.paths(), p.streams(), p.queue_depth())},
      {"mtu payload", p.mtu_payload_bytes() ? fmt::format("{} bytes", p.mtu_payload_bytes()) : "default"},
      {"max message", p.max_message_bytes() ? format_size(p.max_message_bytes()) : "default"},
      {"min RTO", p.min_rto_ns() ? format_duration_ns(p.min_rto_ns()) : "default"},
      {"target region", fmt::format("addr 0x{:x} rkey 0x{:x} length {}", info.remote_addr(), info.rkey(),
                                    format_size(info.remote_length_bytes()))},
      {"job", info.job_id() ? fmt::format("{}", info.job_id()) : "-"},
      {"data packets sent", fmt::format("{}", info.data_packets_sent())},
      {"retransmits", fmt::format("{} (spurious {})", info.retransmits(), info.spurious_retransmits())},
      {"messages completed", fmt::format("{} ({} payload bytes)", info.messages_completed(),
                                         info.payload_bytes_completed())},
      {"duplicates received", fmt::format("{}", info.duplicates_received())},
  });
  if (info.paths_size() > 0) {
    Table paths({"path", "plane", "src port", "state", "sent", "acked", "retx", "spurious", "RTOs", "changes",
                 "srtt", "cwnd", "loss"});
    paths.right_align({0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    for (const v1::PathInfo& path : info.paths()) {
      paths.add_row({fmt::format("{}", path.index()), fmt::format("{}", path.plane()),
                     fmt::format("{}", path.src_port()), path_state_name(path.state()),
                     fmt::format("{}", path.packets_sent()), format_size(path.payload_bytes_acked()),
                     fmt::format("{}", path.retransmits()), fmt::format("{}", path.spurious_retransmits()),
                     fmt::format("{}", path.rtos()), fmt::format("{}", path.state_changes()),
                     format_duration_ns(static_cast<std::int64_t>(path.srtt_ns())),
                     format_size(static_cast<std::uint64_t>(path.cwnd_bytes())), format_percent(path.loss_ewma())});
    }
    out += '\n';
    out += paths.render();
  }
  return out;
}

int cmd_connection_create(Invocation& inv, const std::string& peer, const ConnectionFlags& f,
                          std::uint64_t seed) {
  v1::CreateConnectionRequest request;
  request.set_peer_address(peer);
  *request.mutable_params() = build_params(f);
  request.set_seed(seed);
  Client& c = inv.client();
  const auto info = c.call<v1::ConnectionInfo>(
      "Connections.Create", [&](auto* ctx, auto* r) { return c.connections().Create(ctx, request, r); });
  if (inv.json) print_json(info);
  else print(render_connection(info));
  return kExitOk;
}

int cmd_connection_list(Invocation& inv) {
  Client& c = inv.client();
  const auto list = c.call<v1::ListConnectionsResponse>("Connections.List", [&](auto* ctx, auto* r) {
    return c.connections().List(ctx, v1::ListConnectionsRequest{}, r);
  });
  if (inv.json) {
    print_json(list);
    return kExitOk;
  }
  Table table({"id", "role", "peer", "peer name", "remote id", "transport", "paths", "streams", "job",
               "messages", "retx"});
  table.right_align({0, 4, 6, 7, 8, 9, 10});
  for (const v1::ConnectionInfo& info : list.connections()) {
    table.add_row({fmt::format("{}", info.id()), info.role(), info.peer_address(), info.peer_name(),
                   fmt::format("{}", info.remote_id()), transport_name(info.params().transport()),
                   fmt::format("{}", info.params().paths()), fmt::format("{}", info.params().streams()),
                   info.job_id() ? fmt::format("{}", info.job_id()) : "-",
                   fmt::format("{}", info.messages_completed()), fmt::format("{}", info.retransmits())});
  }
  print(table.render());
  return kExitOk;
}

int cmd_connection_show(Invocation& inv, std::uint32_t id) {
  v1::GetConnectionRequest request;
  request.set_id(id);
  Client& c = inv.client();
  const auto info = c.call<v1::ConnectionInfo>(
      "Connections.Get", [&](auto* ctx, auto* r) { return c.connections().Get(ctx, request, r); });
  if (inv.json) print_json(info);
  else print(render_connection(info));
  return kExitOk;
}

int cmd_connection_delete(Invocation& inv, std::uint32_t id) {
  v1::DeleteConnectionRequest request;
  request.set_id(id);
  Client& c = inv.client();
  const auto response = c.call<v1::DeleteConnectionResponse>(
      "Connections.Delete", [&](auto* ctx, auto* r) { return c.connections().Delete(ctx, request, r); });
  if (inv.json) print_json(response);
  else
    print(fmt::format("deleted connection {} ({})", id,
                      response.peer_released() ? "peer half released" : "peer not reached: its half may remain"));
  return kExitOk;
}

// ---- memory -----------------------------------------------------------------

void add_region_row(Table& table, const v1::RegionInfo& region) {
  table.add_row({fmt::format("{}", region.key()), fmt::format("0x{:x}", region.addr()),
                 format_size(region.length_bytes()), join(region.access(), ","), region.owner()});
}

Table region_table() {
  Table table({"key", "addr", "length", "access", "owner"});
  table.right_align({0, 2});
  return table;
}

int cmd_memory_list(Invocation& inv) {
  Client& c = inv.client();
  const auto list = c.call<v1::ListRegionsResponse>(
      "Memory.List", [&](auto* ctx, auto* r) { return c.memory().List(ctx, v1::ListRegionsRequest{}, r); });
  if (inv.json) {
    print_json(list);
    return kExitOk;
  }
  Table table = region_table();
  for (const v1::RegionInfo& region : list.regions()) add_region_row(table, region);
  print(table.render());
  return kExitOk;
}

int cmd_memory_register(Invocation& inv, const std::string& length, const std::string& access) {
  v1::RegisterRegionRequest request;
  request.set_length_bytes(parse_size_bytes("--length", length));
  static const std::vector<std::string> kAccess = {"local_write", "remote_write", "remote_read", "remote_atomic"};
  for (const std::string& item : split_list(access)) {
    if (std::find(kAccess.begin(), kAccess.end(), item) == kAccess.end()) {
      throw UsageError(fmt::format(
          "--access: unknown access \"{}\" (allowed: local_write, remote_write, remote_read, remote_atomic; "
          "got \"{}\")",
          item, access));
    }
    request.add_access(item);
  }
  Client& c = inv.client();
  const auto region = c.call<v1::RegionInfo>(
      "Memory.Register", [&](auto* ctx, auto* r) { return c.memory().Register(ctx, request, r); });
  if (inv.json) {
    print_json(region);
    return kExitOk;
  }
  Table table = region_table();
  add_region_row(table, region);
  print(table.render());
  return kExitOk;
}

int cmd_memory_deregister(Invocation& inv, std::uint32_t key) {
  v1::DeregisterRegionRequest request;
  request.set_key(key);
  Client& c = inv.client();
  const auto response = c.call<v1::DeregisterRegionResponse>(
      "Memory.Deregister", [&](auto* ctx, auto* r) { return c.memory().Deregister(ctx, request, r); });
  if (inv.json) print_json(response);
  else print(fmt::format("deregistered region {}", key));
  return kExitOk;
}

// ---- fabric -----------------------------------------------------------------

// CLI11 options for a list of fabric keys, collected back into ArgValues.
class FabricOptions {
 public:
  void add(CLI::App* sub, const std::vector<FabricFlagInfo>& infos, const std::string& group) {
    for (const FabricFlagInfo& info : infos) {
      Entry& entry = entries_[std::string(info.key)];
      const std::string name = "--" + std::string(info.key);
      if (info.is_switch) {
        entry.option = sub->add_flag(name, entry.switch_value, std::string(info.help));
      } else {
        entry.option = sub->add_option(name, entry.text, std::string(info.help));
      }
      entry.option->group(group);
      entry.is_switch = info.is_switch;
    }
  }
  ArgValues values() const {
    ArgValues values;
    for (const auto& [key, entry] : entries_) {
      if (entry.option->count() == 0) continue;
      values[key] = entry.is_switch ? (entry.switch_value ? "true" : "false") : entry.text;
    }
    return values;
  }

 private:
  struct Entry {
    CLI::Option* option = nullptr;
    std::string text;
    bool switch_value = false;
    bool is_switch = false;
  };
  std::map<std::string, Entry> entries_;
};

std::string format_link_delay(const v1::LinkState& link) {
  std::string out = format_duration_ns(link.prop_delay_ns() + link.delay_ns());
  if (link.jitter_ns() > 0) out += "+/-" + format_duration_ns(link.jitter_ns());
  return out;
}

std::string format_link_loss(const v1::LinkState& link) {
  const std::string& kind = link.loss_kind();
  if (kind.empty() || kind == "none" || kind == "bernoulli") return format_percent(link.loss_probability());
  if (kind == "correlated") return format_percent(link.loss_probability()) + " corr";
  if (kind == "gilbert_elliott") return "GE";
  if (kind == "four_state") return "4-state";
  return kind;
}

int cmd_fabric_show(Invocation& inv) {
  Client& c = inv.client();
  const auto state = c.call<v1::FabricState>(
      "Fabric.Show", [&](auto* ctx, auto* r) { return c.fabric().Show(ctx, v1::ShowFabricRequest{}, r); });
  if (inv.json) {
    print_json(state);
    return kExitOk;
  }
  print(fmt::format("fabric: {} hosts, {} planes, {} ECMP links per host pair; time {}; forwarded {}, dropped {};"
                    " timeline events pending {}\n",
                    state.hosts(), state.planes(), state.ecmp_links(), format_duration_ns(state.time_ns()),
                    state.frames_forwarded(), state.frames_dropped(), state.timeline_pending()));
  Table table({"plane", "ecmp", "hosts", "dir", "up", "rate", "delay", "loss", "dup", "corrupt", "reorder", "in",
               "out", "drops", "marks"});
  table.right_align({0, 1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
  for (const v1::LinkState& link : state.links()) {
    std::string up = link.up() ? "up" : "DOWN";
    if (link.flap_period_ns() > 0) up += " flap " + format_duration_ns(link.flap_period_ns());
    const std::uint64_t drops = link.drops_random_loss() + link.drops_queue_overflow() + link.drops_link_down();
    table.add_row({fmt::format("{}", link.plane()), fmt::format("{}", link.ecmp()),
                   fmt::format("{}-{}", link.host_a(), link.host_b()), link.direction(), up,
                   format_rate_short(link.rate_bps()), format_link_delay(link), format_link_loss(link),
                   format_percent(link.duplicate_probability()), format_percent(link.corrupt_probability()),
                   format_percent(link.reorder_probability()), fmt::format("{}", link.packets_in()),
                   fmt::format("{}", link.packets_out()), fmt::format("{}", drops),
                   fmt::format("{}", link.ecn_marks())});
  }
  print(table.render());
  return kExitOk;
}

void print_links_changed(Invocation& inv, const v1::SetLinksResponse& response) {
  if (inv.json) print_json(response);
  else
    print(fmt::format("{} link{} changed (fabric time {})", response.links_changed(),
                      response.links_changed() == 1 ? "" : "s", format_duration_ns(response.applied_at_ns())));
}

int cmd_fabric_set(Invocation& inv, const ArgValues& selector_values, const ArgValues& patch_values) {
  if (patch_values.empty()) {
    throw UsageError("fabric set: no settings given (e.g. --loss 1%, --rate 25G; see metarocectl fabric set --help)");
  }
  v1::SetLinksRequest request;
  *request.mutable_selector() = build_link_selector(selector_values, flag_namer);
  *request.mutable_patch() = build_link_patch(patch_values, flag_namer);
  Client& c = inv.client();
  const auto response = c.call<v1::SetLinksResponse>(
      "Fabric.Set", [&](auto* ctx, auto* r) { return c.fabric().Set(ctx, request, r); });
  print_links_changed(inv, response);
  return kExitOk;
}

int cmd_fabric_up_down(Invocation& inv, const ArgValues& selector_values, bool up) {
  v1::LinkStateRequest request;
  *request.mutable_selector() = build_link_selector(selector_values, flag_namer);
  Client& c = inv.client();
  const auto response = c.call<v1::SetLinksResponse>(up ? "Fabric.Up" : "Fabric.Down", [&](auto* ctx, auto* r) {
    return up ? c.fabric().Up(ctx, request, r) : c.fabric().Down(ctx, request, r);
  });
  print_links_changed(inv, response);
  return kExitOk;
}

int cmd_fabric_reset(Invocation& inv) {
  Client& c = inv.client();
  const auto response = c.call<v1::SetLinksResponse>(
      "Fabric.Reset", [&](auto* ctx, auto* r) { return c.fabric().Reset(ctx, v1::ResetFabricRequest{}, r); });
  print_links_changed(inv, response);
  return kExitOk;
}

int cmd_fabric_timeline(Invocation& inv, const std::string& file) {
  const v1::LoadTimelineRequest request = load_timeline_file(file);
  Client& c = inv.client();
  const auto response = c.call<v1::LoadTimelineResponse>(
      "Fabric.LoadTimeline", [&](auto* ctx, auto* r) { return c.fabric().LoadTimeline(ctx, request, r); });
  if (inv.json) print_json(response);
  else
    print(fmt::format("loaded {} timeline event{} (relative to fabric time {})", response.events(),
                      response.events() == 1 ? "" : "s", format_duration_ns(response.base_ns())));
  return kExitOk;
}

// ---- traffic ----------------------------------------------------------------

struct TrafficFlags {
  std::vector<std::string> peers;
  std::string pattern;
  std::string hosts;
  bool bidirectional = false;
  std::string op = "write";
  std::string size, sizes, size_sweep;
  std::uint32_t connections = 1;
  ConnectionFlags connection;
  std::string duration;
  std::uint64_t iterations = 0;
  std::string interval;
  bool no_verify = false;
  std::uint64_t seed = 0;
};

v1::Operation parse_operation(const std::string& op) {
  if (op == "write") return v1::OPERATION_WRITE;
  if (op == "write_imm") return v1::OPERATION_WRITE_IMM;
  if (op == "read") return v1::OPERATION_READ;
  if (op == "send") return v1::OPERATION_SEND;
  if (op == "fetch_add") return v1::OPERATION_FETCH_ADD;
  if (op == "cmp_swap") return v1::OPERATION_CMP_SWAP;
  throw UsageError(fmt::format("--op: unknown operation (allowed: write, write_imm, read, send, fetch_add, "
                               "cmp_swap; got \"{}\")", op));
}

// Everything of the JobSpec except the peers.
v1::JobSpec build_job_spec(const TrafficFlags& f) {
  v1::JobSpec spec;
  spec.set_operation(parse_operation(f.op));
  const bool atomic = spec.operation() == v1::OPERATION_FETCH_ADD || spec.operation() == v1::OPERATION_CMP_SWAP;
  std::vector<std::uint32_t> sizes;
  if (!f.size.empty()) sizes = parse_size_list("--size", f.size);
  else if (!f.sizes.empty()) sizes = parse_size_list("--sizes", f.sizes);
  else if (!f.size_sweep.empty()) sizes = parse_size_sweep("--size-sweep", f.size_sweep);
  else sizes = {atomic ? 8u : 65536u};  // perftest's default size; atomics are 8 bytes
  if (!f.size.empty() && sizes.size() != 1) throw UsageError("--size: one size (use --sizes for a list)");
  for (std::uint32_t s : sizes) spec.add_message_bytes(s);
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

// ---- wiring -----------------------------------------------------------------

constexpr std::string_view kExitCodesFooter = R"(Environment:
  METAROCE_SERVER  default for --server
  METAROCE_TOKEN   default bearer token (after --token and --token-file)

Exit codes:
  0  success
  1  the request ran but the result is a failure (job failed, data did not
     verify, or the job was stopped during `traffic run`)
  2  usage error (bad flags or values)
  3  the daemon refused the request (INVALID_ARGUMENT, NOT_FOUND,
     FAILED_PRECONDITION, ALREADY_EXISTS, RESOURCE_EXHAUSTED, OUT_OF_RANGE,
     UNIMPLEMENTED)
  4  cannot reach or authenticate to the daemon (UNAVAILABLE, UNAUTHENTICATED,
     PERMISSION_DENIED, DEADLINE_EXCEEDED)
  5  internal or other error

Examples:
  metarocectl status
  metarocectl --server unix:///run/metaroce/h1.sock traffic run --peer unix:///run/metaroce/h2.sock --duration 5s
  metarocectl --server fabric:50051 fabric set --plane 1 --loss 1%)";

// Subcommand help does not list the parent's flags, so point at them.
std::string example(std::string_view text) {
  return fmt::format("Example:\n  {}\n\nGlobal flags (--server, --token, --tls..., -o json, --timeout) and exit "
                     "codes: metarocectl --help",
                     text);
}

// Registers a leaf subcommand whose action runs after a successful parse.
class Commands {
 public:
  using Action = std::function<int()>;
  CLI::App* add(CLI::App* parent, const std::string& name, const std::string& description,
                std::string_view example_text, Action action) {
    CLI::App* sub = parent->add_subcommand(name, description);
    sub->footer(example(example_text));
    leaves_.emplace_back(sub, std::move(action));
    return sub;
  }
  CLI::App* group(CLI::App* parent, const std::string& name, const std::string& description,
                  std::string_view example_text) {
    CLI::App* sub = parent->add_subcommand(name, description);
    sub->footer(example(example_text));
    sub->require_subcommand(1);
    return sub;
  }
  const Action* selected() const {
    for (const auto& [app, action] : leaves_)
      if (app->parsed()) return &action;
    return nullptr;
  }

 private:
  std::vector<std::pair<CLI::App*, Action>> leaves_;
};

int run(int argc, char** argv) {
  Invocation inv;
  CLI::App app("metarocectl: control metaroced (the metaroce-testbed daemon) over gRPC", "metarocectl");
  app.footer(std::string(kExitCodesFooter));
  app.require_subcommand(1);
  app.fallthrough();  // global flags may also follow the subcommand

  GlobalFlags& g = inv.flags;
  app.add_option("--server", g.server, "daemon address: unix:///path, unix:path or host:port")
      ->envname("METAROCE_SERVER")
      ->capture_default_str();
  CLI::Option* token = app.add_option("--token", g.token, "bearer token (sent as authorization: Bearer T)");
  app.add_option("--token-file", g.token_file, "file holding the bearer token")->excludes(token);
  CLI::Option* tls = app.add_flag("--tls", g.tls, "use TLS (TCP addresses)");
  app.add_option("--tls-ca", g.tls_ca, "PEM file of trusted CA certificates")->needs(tls);
  app.add_option("--tls-cert", g.tls_cert, "PEM client certificate (with --tls-key)")->needs(tls);
  app.add_option("--tls-key", g.tls_key, "PEM client private key (with --tls-cert)")->needs(tls);
  app.add_option("--tls-server-name", g.tls_server_name, "expected name in the server certificate")->needs(tls);
  app.add_option("-o,--output", g.output, "output format: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  app.add_option("--timeout", g.timeout, "deadline of each RPC, e.g. 10s (0 = none; Watch streams have none)")
      ->capture_default_str();

  Commands commands;

  // Daemon
  commands.add(&app, "status", "name, version, role, uptime and counts of the daemon", "metarocectl status",
               [&] { return cmd_status(inv); });
  commands.add(&app, "config", "the daemon's effective configuration (YAML; JSON with -o json)",
               "metarocectl config -o json", [&] { return cmd_config(inv); });
  CLI::App* port = commands.group(&app, "port", "datapath ports", "metarocectl port list");
  commands.add(port, "list", "datapath ports and their counters", "metarocectl port list",
               [&] { return cmd_port_list(inv); });
  std::string counter_filter;
  commands.add(&app, "counters", "every counter of the daemon (name, labels, value)",
               "metarocectl counters --filter port_rx", [&] { return cmd_counters(inv, counter_filter); })
      ->add_option("--filter", counter_filter, "only counters whose name or labels contain this text");
  WatchFlags watch_flags;
  CLI::App* watch = commands.add(&app, "watch", "stream counters and job progress (Ctrl-C to stop)",
                                 "metarocectl watch --interval 500ms --count 10",
                                 [&] { return cmd_watch(inv, watch_flags); });
  watch->add_option("--interval", watch_flags.interval, "time between events, [10ms, 60s]")->capture_default_str();
  watch->add_flag("--counters", watch_flags.counters, "include every counter in each event");
  watch->add_option("--count", watch_flags.count, "stop after this many events (0 = until Ctrl-C)");
  watch->add_option("--job", watch_flags.job_ids, "follow only this job (repeatable; default: all running)");

  // Connections
  CLI::App* connection = commands.group(&app, "connection", "connections to peer daemons",
                                        "metarocectl connection create --peer unix:///run/metaroce/h2.sock --paths 8");
  std::string connection_peer;
  ConnectionFlags connection_flags;
  std::uint64_t connection_seed = 0;
  CLI::App* create = commands.add(
      connection, "create", "create a connection to a peer daemon",
      "metarocectl connection create --peer unix:///run/metaroce/h2.sock --paths 8 --min-rto 200us",
      [&] { return cmd_connection_create(inv, connection_peer, connection_flags, connection_seed); });
  create->add_option("--peer", connection_peer, "gRPC address of the peer daemon")->required();
  add_connection_flags(create, connection_flags);
  create->add_option("--seed", connection_seed, "data pattern seed of the target region (0 = random)");
  commands.add(connection, "list", "connections of this daemon", "metarocectl connection list",
               [&] { return cmd_connection_list(inv); });
  std::uint32_t connection_id = 0;
  commands.add(connection, "show", "one connection and its paths", "metarocectl connection show 1",
               [&] { return cmd_connection_show(inv, connection_id); })
      ->add_option("id", connection_id, "connection id")
      ->required();
  commands.add(connection, "delete", "delete a connection (both halves)", "metarocectl connection delete 1",
               [&] { return cmd_connection_delete(inv, connection_id); })
      ->add_option("id", connection_id, "connection id")
      ->required();

  // Memory
  CLI::App* memory = commands.group(&app, "memory", "registered memory regions", "metarocectl memory list");
  commands.add(memory, "list", "registered regions", "metarocectl memory list", [&] { return cmd_memory_list(inv); });
  std::string region_length, region_access;
  CLI::App* reg = commands.add(memory, "register", "allocate and register a region",
                               "metarocectl memory register --length 1M --access remote_write,remote_read",
                               [&] { return cmd_memory_register(inv, region_length, region_access); });
  reg->add_option("--length", region_length, "size, e.g. 64K, 1M")->required();
  reg->add_option("--access", region_access,
                  "comma-separated: local_write, remote_write, remote_read, remote_atomic");
  std::uint32_t region_key = 0;
  commands.add(memory, "deregister", "deregister a region", "metarocectl memory deregister 3",
               [&] { return cmd_memory_deregister(inv, region_key); })
      ->add_option("key", region_key, "region key")
      ->required();

  // Fabric
  CLI::App* fabric = commands.group(&app, "fabric", "the lossy-fabric emulator (fabric role)",
                                    "metarocectl fabric set --plane 1 --loss 1%");
  commands.add(fabric, "show", "every ECMP link's settings and counters", "metarocectl fabric show",
               [&] { return cmd_fabric_show(inv); });
  FabricOptions set_selector, set_patch, down_selector, up_selector;
  CLI::App* set = commands.add(
      fabric, "set", "change settings of the selected links (all or none)",
      "metarocectl fabric set --plane 1 --direction a_to_b --loss-model gilbert_elliott --ge-p 1% --ge-r 30%",
      [&] { return cmd_fabric_set(inv, set_selector.values(), set_patch.values()); });
  set_selector.add(set, selector_flag_infos(), "Selector (default: every link)");
  set_patch.add(set, patch_flag_infos(), "Settings (at least one)");
  CLI::App* down = commands.add(fabric, "down", "take the selected links down (blackhole)",
                                "metarocectl fabric down --plane 0 --hosts 0,1",
                                [&] { return cmd_fabric_up_down(inv, down_selector.values(), false); });
  down_selector.add(down, selector_flag_infos(), "Selector (default: every link)");
  CLI::App* up = commands.add(fabric, "up", "bring the selected links up", "metarocectl fabric up --plane 0",
                              [&] { return cmd_fabric_up_down(inv, up_selector.values(), true); });
  up_selector.add(up, selector_flag_infos(), "Selector (default: every link)");
  commands.add(fabric, "reset", "back to the configured settings, every link up", "metarocectl fabric reset",
               [&] { return cmd_fabric_reset(inv); });
  std::string timeline_file;
  CLI::App* timeline = commands.add(fabric, "timeline", "load a timeline of changes (YAML)",
                                    "metarocectl fabric timeline plane1-outage.yaml",
                                    [&] { return cmd_fabric_timeline(inv, timeline_file); });
  timeline->add_option("file", timeline_file, "timeline YAML file")->required()->check(CLI::ExistingFile);
  timeline->footer(example("metarocectl fabric timeline plane1-outage.yaml") + R"(

Timeline file:
  events:
    - {at: 2s, plane: 1, action: down, label: plane 1 fails}
    - {at: 4s, plane: 1, action: up}
    - {at: 5s, plane: 0, direction: a_to_b, action: set, loss: 1%, delay: 100us}
  Keys: at (required), action (set | down | up, required), label, plane, ecmp,
  direction, hosts ("A,B") or host_a/host_b, and for `set` any setting of
  `fabric set` without its dashes (loss, prop_delay, loss_model, ge_p, ...).)");

  // Traffic
  CLI::App* traffic = commands.group(&app, "traffic", "perftest-style traffic jobs",
                                     "metarocectl traffic run --peer unix:///run/metaroce/h2.sock --duration 5s");
  // run and start get their own flag storage: CLI11 options point into it.
  TrafficFlags run_flags, start_flags;
  auto add_traffic_flags = [&](CLI::App* sub, TrafficFlags& tf) {
    sub->add_option("--peer", tf.peers, "target daemon address (repeatable)")->group("Targets");
    sub->add_option("--pattern", tf.pattern, "one-to-one | incast | all-to-all (with --hosts; ignores --server)")
        ->check(CLI::IsMember({"one-to-one", "incast", "all-to-all"}))
        ->group("Targets");
    sub->add_option("--hosts", tf.hosts, "daemon addresses for --pattern, comma-separated")->group("Targets");
    sub->add_flag("--bidirectional", tf.bidirectional, "one-to-one: also run hosts[1] -> hosts[0]")
        ->group("Targets");
    sub->add_option("--op", tf.op, "write | write_imm | read | send | fetch_add | cmp_swap")
        ->check(CLI::IsMember({"write", "write_imm", "read", "send", "fetch_add", "cmp_swap"}))
        ->capture_default_str();
    CLI::Option* size = sub->add_option("--size", tf.size, "message size, e.g. 64K (default 64K; atomics 8)");
    CLI::Option* sizes = sub->add_option("--sizes", tf.sizes, "sizes run in order, e.g. 64,4K,64K");
    CLI::Option* sweep = sub->add_option("--size-sweep", tf.size_sweep, "MIN:MAX, powers of two, e.g. 2:8M");
    size->excludes(sizes)->excludes(sweep);
    sizes->excludes(sweep);
    sub->add_option("--connections", tf.connections, "connections per peer, [1, 64]")->capture_default_str();
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
      [&] { return cmd_traffic_start(inv, run_flags, /*run=*/true); });
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
      [&] { return cmd_traffic_start(inv, start_flags, /*run=*/false); });
  add_traffic_flags(traffic_start, start_flags);
  traffic_start->footer(traffic_start->get_footer() + R"(

Output: the job id (with --pattern: "<id> <daemon address>" per job); with
-o json the JobInfo (one JSON line per job when there are several).)");
  std::uint64_t job_id = 0;
  commands.add(traffic, "watch", "follow a running job to its end (Ctrl-C detaches)", "metarocectl traffic watch 3",
               [&] { return cmd_traffic_watch(inv, job_id); })
      ->add_option("id", job_id, "job id")
      ->required();
  commands.add(traffic, "stop", "stop a job early (it still reports results)", "metarocectl traffic stop 3",
               [&] { return cmd_traffic_stop(inv, job_id); })
      ->add_option("id", job_id, "job id")
      ->required();
  commands.add(traffic, "result", "a job's result tables", "metarocectl traffic result 3",
               [&] { return cmd_traffic_result(inv, job_id); })
      ->add_option("id", job_id, "job id")
      ->required();
  commands.add(traffic, "list", "jobs of this daemon", "metarocectl traffic list",
               [&] { return cmd_traffic_list(inv); });

  // Scenarios and sweeps
  CLI::App* scenario = commands.group(&app, "scenario", "scripted fault-injection runs with reports",
                                      "metarocectl scenario run configs/scenarios/plane-failure.yaml --out out/pf");
  ScenarioFlags scenario_flags;
  CLI::App* scenario_validate =
      commands.add(scenario, "validate", "check a scenario file (every key, unit and range)",
                   "metarocectl scenario validate configs/scenarios/plane-failure.yaml",
                   [&] { return cmd_scenario_validate(scenario_flags, inv.json); });
  scenario_validate->add_option("file", scenario_flags.file, "scenario YAML")->required()->check(CLI::ExistingFile);
  CLI::App* scenario_run = commands.add(
      scenario, "run", "run a scenario against live daemons (or --sim) and write the report",
      "metarocectl scenario run configs/scenarios/plane-failure.yaml --out out/pf --sim",
      [&] { return cmd_scenario_run(scenario_flags, inv.client_options, inv.json); });
  scenario_run->add_option("file", scenario_flags.file, "scenario YAML")->required()->check(CLI::ExistingFile);
  scenario_run->add_option("--out", scenario_flags.out, "report directory (report.json, timeseries.csv, report.html)")
      ->capture_default_str();
  scenario_run->add_flag("--sim", scenario_flags.sim, "run in the simulator (virtual time, same transport and emulator)");
  scenario_run->add_option("--host", scenario_flags.host_overrides, "NAME=ADDRESS: override a host's daemon address");
  scenario_run->add_option("--fabric", scenario_flags.fabric_override, "override the fabric daemon's address");
  scenario_run->footer(scenario_run->get_footer() + R"(

Exit codes: 0 every assertion passed; 1 an assertion failed; 2 the file or a
flag is invalid; 3/4 a daemon refused or could not be reached. The scenario
format is documented in docs/scenarios.md.)");
  SweepFlags sweep_flags;
  CLI::App* sweep = commands.add(
      &app, "sweep", "parameter sweep, MetaRoCE and RoCEv2 side by side, with a report",
      "metarocectl sweep --param loss --values 0,1%,5%,10% --sim --out out/sweep",
      [&] { return cmd_sweep(sweep_flags, inv.client_options, inv.json); });
  sweep->add_option("--param", sweep_flags.parameter, "loss | skew | planes (sim only) | message_bytes | connections")
      ->capture_default_str();
  sweep->add_option("--values", sweep_flags.values, "comma-separated values (units allowed: 1%, 4us, 16K)")
      ->capture_default_str();
  sweep->add_option("--duration", sweep_flags.duration, "per run")->capture_default_str();
  sweep->add_option("--interval", sweep_flags.interval, "sampling interval")->capture_default_str();
  sweep->add_option("--size", sweep_flags.size, "message size")->capture_default_str();
  sweep->add_option("--planes", sweep_flags.planes, "planes (RoCEv2 gets one QP per plane)")->capture_default_str();
  sweep->add_option("--from", sweep_flags.from, "live: sending daemon address");
  sweep->add_option("--to", sweep_flags.to, "live: receiving daemon address");
  sweep->add_option("--fabric", sweep_flags.fabric, "live: fabric daemon address");
  sweep->add_flag("--sim", sweep_flags.sim, "run in the simulator");
  sweep->add_option("--out", sweep_flags.out, "report directory")->capture_default_str();
  sweep->add_option("--seed", sweep_flags.seed, "seed")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the error
    return code == 0 ? kExitOk : kExitUsage;
  }

  const Commands::Action* action = commands.selected();
  if (action == nullptr) {
    std::fprintf(stderr, "metarocectl: no command given; see metarocectl --help\n");
    return kExitUsage;
  }
  try {
    inv.resolve(token);
    return (*action)();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "metarocectl: %s\n", e.what());
    return kExitUsage;
  } catch (const RpcError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return e.exit_code();
  }
}

}  // namespace
}  // namespace metarocectl

int main(int argc, char** argv) {
  // Before any gRPC thread exists, so that every thread inherits the mask.
  metarocectl::interrupts::install();
  try {
    return metarocectl::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "metarocectl: internal error: %s\n", e.what());
    return metarocectl::kExitInternal;
  }
}
