// metarocectl: the operator's CLI for metaroced (gRPC API metaroce.v1).
//
// This file builds the CLI11 app and its global flags and dispatches; each
// noun's subcommands are wired to RPCs in cmd_<noun>.cc (see commands.h).
// Parsing of units and fabric flags, rendering and the gRPC plumbing live in
// the metarocectl_core library.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "client.h"
#include "commands.h"
#include "units.h"

namespace metarocectl {
namespace {

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
  6  INCONCLUSIVE (scenario run, sweep): a live run in which this host's
     datapath, not the emulated fabric, limited the result

Examples:
  metarocectl status
  metarocectl --server unix:///run/metaroce/h1.sock traffic run --peer unix:///run/metaroce/h2.sock --duration 5s
  metarocectl --server fabric:50051 fabric set --plane 1 --loss 1%)";

int run(int argc, char** argv) {
  Context ctx;
  Invocation& inv = ctx.inv;
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

  // One registration function per noun, in the order of the help text.
  add_status_commands(app, ctx);
  add_connection_commands(app, ctx);
  add_memory_commands(app, ctx);
  add_fabric_commands(app, ctx);
  add_traffic_commands(app, ctx);
  add_scenario_commands(app, ctx);
  add_capture_commands(app, ctx);
  add_conformance_commands(app, ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the error
    return code == 0 ? kExitOk : kExitUsage;
  }

  const Commands::Action* action = ctx.commands.selected();
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
