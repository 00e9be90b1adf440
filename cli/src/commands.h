// Private header of the metarocectl command files (cmd_*.cc): the shared state
// of one invocation, output helpers, the leaf-command registry and one
// registration function per noun, called by main.cc in help order.
#pragma once

#include <CLI/CLI.hpp>
#include <google/protobuf/message.h>
#include <google/protobuf/repeated_ptr_field.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client.h"
#include "units.h"

namespace metarocectl {

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

void print(std::string_view text);
void print_json(const google::protobuf::Message& message);
std::string join(const google::protobuf::RepeatedPtrField<std::string>& items, std::string_view sep);

// ---- wiring -----------------------------------------------------------------

// Subcommand help does not list the parent's flags, so point at them.
std::string example(std::string_view text);

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

// What the registration functions share: the invocation, the registry of
// leaf commands, and flag storage that CLI11 options point into (it must
// outlive the registration functions, so the context owns it).
class Context {
 public:
  Invocation inv;
  Commands commands;

  // A default-constructed T that lives as long as the context.
  template <typename T>
  T& keep() {
    auto owned = std::make_shared<T>();
    T& object = *owned;
    kept_.push_back(std::move(owned));
    return object;
  }

 private:
  std::vector<std::shared_ptr<void>> kept_;
};

// ---- connection parameters (connection create, traffic run/start) -----------

struct ConnectionFlags {
  std::string transport = "metaroce";
  std::uint32_t paths = 0, streams = 0, queue_depth = 0;  // 0 = the daemon's default
  std::string mtu, max_message, min_rto;
  std::uint32_t first_plane = 0;
};

metaroce::v1::ConnectionParams build_params(const ConnectionFlags& f);
void add_connection_flags(CLI::App* sub, ConnectionFlags& f);

// ---- one registration function per noun (cmd_<noun>.cc) ---------------------

void add_status_commands(CLI::App& app, Context& ctx);      // status, config, port, counters, watch
void add_connection_commands(CLI::App& app, Context& ctx);  // connection
void add_memory_commands(CLI::App& app, Context& ctx);      // memory
void add_fabric_commands(CLI::App& app, Context& ctx);      // fabric
void add_traffic_commands(CLI::App& app, Context& ctx);     // traffic
void add_scenario_commands(CLI::App& app, Context& ctx);    // scenario, sweep
void add_capture_commands(CLI::App& app, Context& ctx);     // capture
void add_conformance_commands(CLI::App& app, Context& ctx);  // conformance

}  // namespace metarocectl
