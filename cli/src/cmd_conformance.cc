// metarocectl conformance run|list: the packet-level conformance suite
// (conformance/) against a device under test reached through its daemon's
// metaroce.v1 API and its UDP endpoint, and its registration
// (add_conformance_commands).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

#include "client.h"
#include "commands.h"
#include "metaroce/conformance/grpc_dut.h"
#include "metaroce/conformance/report.h"
#include "metaroce/conformance/suite.h"
#include "metaroce/security/server_security.h"
#include "metaroce/security/tls_credentials.h"
#include "units.h"

namespace mc = metaroce::conformance;

namespace metarocectl {
namespace {

struct ConformanceFlags {
  std::string target;
  std::string cases;
  std::string json_file, junit_file, pcap_dir;
  std::string local_ip;
  std::string answer_timeout = "2s";
  std::uint64_t seed = 1;
  // The suite's own Peer service (the cases where the DUT sends): mc::PeerServiceOptions.
  std::string peer_listen, peer_address;
  std::string peer_tls_cert, peer_tls_key, peer_tls_client_ca;
  std::string peer_token_file;
};

// --peer-* as the suite's Peer service options; files are read here with the
// rules the daemon applies to its control.tls and control.token_file.
mc::PeerServiceOptions peer_service_options(const ConformanceFlags& f) {
  mc::PeerServiceOptions p;
  p.listen = f.peer_listen;
  p.address = f.peer_address;
  auto read = [](const std::string& flag, const std::string& path, std::string* out,
                 std::string (*reader)(const std::string&, const std::string&, std::string*)) {
    if (path.empty()) return;
    if (std::string e = reader(path, flag, out); !e.empty()) throw UsageError(e);
  };
  if (f.peer_tls_cert.empty() != f.peer_tls_key.empty())
    throw UsageError("--peer-tls-cert and --peer-tls-key: give both or neither");
  if (!f.peer_tls_client_ca.empty() && f.peer_tls_cert.empty())
    throw UsageError("--peer-tls-client-ca: needs --peer-tls-cert and --peer-tls-key (mutual TLS is TLS first)");
  if (!f.peer_tls_cert.empty()) {
    metaroce::security::ServerTlsPem tls;
    read("--peer-tls-cert", f.peer_tls_cert, &tls.cert_chain, metaroce::security::read_pem_file);
    read("--peer-tls-key", f.peer_tls_key, &tls.private_key, metaroce::security::read_pem_file);
    read("--peer-tls-client-ca", f.peer_tls_client_ca, &tls.client_ca, metaroce::security::read_pem_file);
    p.tls = std::move(tls);
  }
  read("--peer-token-file", f.peer_token_file, &p.token, metaroce::security::read_token_file);
  return p;
}

void write_file(const std::string& flag, const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out) throw UsageError(fmt::format("{}: cannot write '{}'", flag, path));
}

int cmd_conformance_run(Invocation& inv, const ConformanceFlags& f) {
  std::string error;
  const auto cases = mc::select_cases(f.cases, "--cases", &error);
  if (cases.empty()) throw UsageError(error);
  const std::int64_t timeout_ns = parse_duration_ns("--answer-timeout", f.answer_timeout);
  if (timeout_ns < 10'000'000 || timeout_ns > 60'000'000'000)
    throw UsageError(fmt::format("--answer-timeout: allowed range [10ms, 60s] (got {})", f.answer_timeout));
  // normalize_server_address names --server in its errors; this flag is --target.
  if (f.target.empty()) throw UsageError("--target: empty address (allowed: unix:///path, unix:path or host:port)");
  const std::string target = normalize_server_address(f.target);
  mc::GrpcDutOptions o;
  o.peer = peer_service_options(f);
  std::unique_ptr<Client> client = inv.client_for(target);
  o.target = target;
  o.channel = client->channel();
  o.prepare = [c = client.get()](grpc::ClientContext& ctx) { c->prepare(ctx, /*streaming=*/false); };
  o.local_ip = f.local_ip;
  std::unique_ptr<mc::Dut> dut;
  try {
    dut = mc::connect_grpc_dut(o);
  } catch (const mc::DutSetupError& e) {
    throw UsageError(e.what());
  } catch (const mc::DutError& e) {
    std::fprintf(stderr, "metarocectl: --target %s: %s\n", target.c_str(), e.what());
    return kExitUnreachable;
  }
  mc::RunOptions ro;
  ro.answer_timeout = std::chrono::milliseconds(timeout_ns / 1'000'000);
  ro.seed = f.seed;
  mc::RunSummary run;
  run.target = target;
  run.dut = dut->describe();
  run.flow = dut->flow_to_dut();
  run.results = mc::run_cases(*dut, cases, ro);
  if (!f.pcap_dir.empty() && !mc::write_failure_pcaps(run, f.pcap_dir, &error)) throw UsageError(error);
  const std::string json = mc::render_json(run);
  if (!f.json_file.empty()) write_file("--json", f.json_file, json);
  if (!f.junit_file.empty()) write_file("--junit", f.junit_file, mc::render_junit(run));
  print(inv.json ? json : mc::render_table(run));
  return run.failed() == 0 ? kExitOk : kExitResultFailed;
}

int cmd_conformance_list(Invocation& inv, const std::string& patterns) {
  std::string error;
  const auto cases = mc::select_cases(patterns, "--cases", &error);
  if (cases.empty()) throw UsageError(error);
  std::string out;
  if (inv.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const mc::CaseInfo* c : cases)
      j.push_back({{"id", c->id}, {"spec", c->spec}, {"title", c->title}, {"sends", c->sends}, {"expects", c->expects}});
    out = j.dump(2) + "\n";
  } else {
    for (const mc::CaseInfo* c : cases)
      out += fmt::format("{}  ({})\n  {}\n  sends:   {}\n  expects: {}\n\n", c->id, c->spec, c->title, c->sends,
                         c->expects);
  }
  print(out);
  return kExitOk;
}

}  // namespace

void add_conformance_commands(CLI::App& app, Context& ctx) {
  Invocation& inv = ctx.inv;
  Commands& commands = ctx.commands;
  CLI::App* conformance = commands.group(&app, "conformance",
                                         "packet-level conformance suite for MetaRoCE wire v1 (docs/conformance.md)",
                                         "metarocectl conformance run --target unix:///run/metaroce/dut.sock");
  ConformanceFlags& f = ctx.keep<ConformanceFlags>();
  CLI::App* run = commands.add(
      conformance, "run", "run the catalogue's cases against a device under test; exit 0 only when all pass",
      "metarocectl conformance run --target unix:///run/metaroce/dut.sock --cases 'sack.*,nak.*' --junit conf.xml",
      [&inv, &f] { return cmd_conformance_run(inv, f); });
  run->add_option("--target", f.target,
                  "gRPC address of the DUT's daemon (unix:///path or host:port; --token/--tls apply); its endpoint "
                  "must be reachable over UDP from here")
      ->required();
  run->add_option("--cases", f.cases, "comma-separated case ids or globs (* and ?), e.g. 'sack.*,nak.bad-key'; "
                                      "default: every case");
  run->add_option("--json", f.json_file, "also write the results as JSON to this file");
  run->add_option("--junit", f.junit_file, "also write the results as JUnit XML to this file");
  run->add_option("--pcap-dir", f.pcap_dir, "write each failed case's packets to DIR/<case>.pcapng (created if needed)");
  run->add_option("--local-ip", f.local_ip,
                  "the suite's own IPv4 address for packets (default: on loopback the other of 127.0.0.1/127.0.0.2, "
                  "else the route's source address)");
  run->add_option("--answer-timeout", f.answer_timeout,
                  "how long to wait for an answer the DUT must send, [10ms, 60s]")
      ->capture_default_str();
  run->add_option("--seed", f.seed, "seed of connection ids and data patterns")->capture_default_str();
  // The suite's Peer service, which the DUT's daemon calls in the cases where the DUT sends.
  run->add_option("--peer-listen", f.peer_listen,
                  "serve the suite's Peer service on TCP HOST:PORT (port 0: a free one), for a DUT on another host; "
                  "plain TCP only on loopback (default: a Unix socket in a fresh directory under /tmp)");
  run->add_option("--peer-address", f.peer_address,
                  "HOST:PORT the DUT's daemon dials for the suite's Peer service (default: --peer-listen's, a "
                  "wildcard host replaced by the suite's --local-ip)");
  run->add_option("--peer-tls-cert", f.peer_tls_cert,
                  "PEM certificate of the suite's Peer service (with --peer-tls-key); the DUT's "
                  "control.peer_tls.ca must trust it");
  run->add_option("--peer-tls-key", f.peer_tls_key, "PEM private key of --peer-tls-cert");
  run->add_option("--peer-tls-client-ca", f.peer_tls_client_ca,
                  "mutual TLS: accept only DUT daemons whose client certificate (control.peer_tls.cert) this PEM CA "
                  "signed");
  run->add_option("--peer-token-file", f.peer_token_file,
                  "require this bearer token of the DUT's daemon (its control.peer_token_file, else token_file)");
  std::string& list_cases = ctx.keep<std::string>();
  CLI::App* list = commands.add(conformance, "list", "the catalogue: each case's id, spec sections, what it sends "
                                                     "and expects",
                                "metarocectl conformance list --cases 'nak.*'",
                                [&inv, &list_cases] { return cmd_conformance_list(inv, list_cases); });
  list->add_option("--cases", list_cases, "comma-separated case ids or globs (* and ?)");
}

}  // namespace metarocectl
