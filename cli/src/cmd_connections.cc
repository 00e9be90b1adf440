// metarocectl connection create/list/show/delete, the connection-parameter
// flags shared with `traffic run|start` (declared in commands.h), and the
// registration of the `connection` noun (add_connection_commands).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client.h"
#include "metaroce/transport/connection_params.h"
#include "commands.h"
#include "render.h"
#include "units.h"

namespace v1 = metaroce::v1;

namespace metarocectl {

// ---- connections ------------------------------------------------------------

// A flag left out sends 0, which the daemon reads as the parameter's default
// (transport/connection_params.h), so the CLI has no defaults of its own.
v1::ConnectionParams build_params(const ConnectionFlags& f) {
  v1::ConnectionParams params;
  params.set_transport(f.transport == "rocev2" ? v1::TRANSPORT_ROCEV2 : v1::TRANSPORT_METAROCE);
  params.set_paths(f.paths);
  params.set_streams(f.streams);
  params.set_queue_depth(f.queue_depth);
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

namespace {

// "<doc>, [lo, hi] (default d)" from the table; the daemon checks the range.
namespace mt = metaroce::transport;
std::string count_help(const mt::ConnectionParam& p) {
  return fmt::format("{}, [{}, {}] (default {})", p.doc, p.min, p.max, p.default_value);
}
std::string size_help(const mt::ConnectionParam& p, std::string_view default_text) {
  return fmt::format("{}, [{}, {}]{} (default {})", p.doc, format_size(static_cast<std::uint64_t>(p.min)),
                     format_size(static_cast<std::uint64_t>(p.max)),
                     p.multiple_of > 1 ? fmt::format(", a multiple of {}", p.multiple_of) : "", default_text);
}

}  // namespace

void add_connection_flags(CLI::App* sub, ConnectionFlags& f) {
  sub->add_option("--transport", f.transport, "metaroce (multipath) or rocev2 (go-back-N baseline)")
      ->check(CLI::IsMember({"metaroce", "rocev2"}))
      ->capture_default_str();
  // The paths' default is a rule, in their doc line.
  sub->add_option("--paths", f.paths,
                  fmt::format("{}, [{}, {}]", mt::kParamPaths.doc, mt::kParamPaths.min, mt::kParamPaths.max));
  sub->add_option("--streams", f.streams, count_help(mt::kParamStreams));
  sub->add_option("--queue-depth", f.queue_depth, count_help(mt::kParamQueueDepth));
  sub->add_option("--mtu", f.mtu,
                  size_help(mt::kParamMtuPayload,
                            fmt::format("the daemon's endpoint.mtu_payload, {} unless set", mt::kParamMtuPayload.default_value)));
  sub->add_option("--max-message", f.max_message,
                  size_help(mt::kParamMaxMessage, format_size(static_cast<std::uint64_t>(mt::kParamMaxMessage.default_value))));
  sub->add_option("--min-rto", f.min_rto,
                  fmt::format("{}, e.g. 200us, [{}, {}] (default: the daemon's endpoint.min_rto_ns, {})",
                              mt::kParamMinRto.doc, format_duration_ns(mt::kParamMinRto.min),
                              format_duration_ns(mt::kParamMinRto.max), format_duration_ns(mt::kParamMinRto.default_value)));
  sub->add_option("--first-plane", f.first_plane, "plane of path 0; path i uses (first-plane + i) % planes");
}

namespace {

std::string transport_name(v1::Transport transport) {
  return transport == v1::TRANSPORT_ROCEV2 ? "rocev2" : "metaroce";
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
    Table paths({"path", "plane", "src port", "moves", "state", "sent", "acked", "retx", "spurious", "RTOs",
                 "changes", "srtt", "cwnd", "loss"});
    paths.right_align({0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13});
    for (const v1::PathInfo& path : info.paths()) {
      paths.add_row({fmt::format("{}", path.index()), fmt::format("{}", path.plane()),
                     fmt::format("{}", path.src_port()), fmt::format("{}", path.entropy_rotations()),
                     path_state_name(path.state()),
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
  // Page after page (the daemon's page size), joined into one answer.
  v1::ListConnectionsResponse list;
  v1::ListConnectionsRequest request;
  do {
    const auto page = c.call<v1::ListConnectionsResponse>(
        "Connections.List", [&](auto* ctx, auto* r) { return c.connections().List(ctx, request, r); });
    for (const v1::ConnectionInfo& info : page.connections()) *list.add_connections() = info;
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  list.set_total(static_cast<std::uint32_t>(list.connections_size()));
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

}  // namespace

void add_connection_commands(CLI::App& app, Context& ctx) {
  Invocation& inv = ctx.inv;
  Commands& commands = ctx.commands;

  // Connections
  CLI::App* connection = commands.group(&app, "connection", "connections to peer daemons",
                                        "metarocectl connection create --peer unix:///run/metaroce/h2.sock --paths 8");
  std::string& connection_peer = ctx.keep<std::string>();
  ConnectionFlags& connection_flags = ctx.keep<ConnectionFlags>();
  std::uint64_t& connection_seed = ctx.keep<std::uint64_t>();
  CLI::App* create = commands.add(
      connection, "create", "create a connection to a peer daemon",
      "metarocectl connection create --peer unix:///run/metaroce/h2.sock --paths 8 --min-rto 200us",
      [&inv, &connection_peer, &connection_flags, &connection_seed] {
        return cmd_connection_create(inv, connection_peer, connection_flags, connection_seed);
      });
  create->add_option("--peer", connection_peer, "gRPC address of the peer daemon")->required();
  add_connection_flags(create, connection_flags);
  create->add_option("--seed", connection_seed, "data pattern seed of the target region (0 = random)");
  commands.add(connection, "list", "connections of this daemon", "metarocectl connection list",
               [&inv] { return cmd_connection_list(inv); });
  std::uint32_t& connection_id = ctx.keep<std::uint32_t>();
  commands.add(connection, "show", "one connection and its paths", "metarocectl connection show 1",
               [&inv, &connection_id] { return cmd_connection_show(inv, connection_id); })
      ->add_option("id", connection_id, "connection id")
      ->required();
  commands.add(connection, "delete", "delete a connection (both halves)", "metarocectl connection delete 1",
               [&inv, &connection_id] { return cmd_connection_delete(inv, connection_id); })
      ->add_option("id", connection_id, "connection id")
      ->required();
}

}  // namespace metarocectl
