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

#include "client.h"
#include "commands.h"
#include "metaroce/conformance/grpc_dut.h"
#include "metaroce/conformance/report.h"
#include "metaroce/conformance/suite.h"
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
};

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
  std::unique_ptr<Client> client = inv.client_for(target);
  mc::GrpcDutOptions o;
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
  std::string& list_cases = ctx.keep<std::string>();
  CLI::App* list = commands.add(conformance, "list", "the catalogue: each case's id, spec sections, what it sends "
                                                     "and expects",
                                "metarocectl conformance list --cases 'nak.*'",
                                [&inv, &list_cases] { return cmd_conformance_list(inv, list_cases); });
  list->add_option("--cases", list_cases, "comma-separated case ids or globs (* and ?)");
}

}  // namespace metarocectl
