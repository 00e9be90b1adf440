// The gRPC side of metarocectl: server addresses, channel credentials,
// bearer tokens, per-call deadlines, error reporting and exit codes.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "metaroce/v1/capture.grpc.pb.h"
#include "metaroce/v1/connection.grpc.pb.h"
#include "metaroce/v1/daemon.grpc.pb.h"
#include "metaroce/v1/fabric.grpc.pb.h"
#include "metaroce/v1/traffic.grpc.pb.h"

namespace google::protobuf {
class Message;
}

namespace metarocectl {

// Process exit codes (documented in `metarocectl --help`).
enum ExitCode : int {
  kExitOk = 0,
  kExitResultFailed = 1,  // ran, but the job failed/was stopped or data did not verify
  kExitUsage = 2,         // bad flags
  kExitRefused = 3,       // the daemon refused the request
  kExitUnreachable = 4,   // cannot reach or authenticate to the daemon
  kExitInternal = 5,      // anything else
  kExitInconclusive = 6,  // a live scenario ran, but the host, not the emulated fabric, limited it
};

inline constexpr std::string_view kDefaultServer = "unix:///run/metaroce/metaroced.sock";

// Exit code for a failed RPC's status code (kExitOk for OK).
int exit_code_for(grpc::StatusCode code);
// "INVALID_ARGUMENT", "UNAVAILABLE", ...
std::string status_code_name(grpc::StatusCode code);
// "metarocectl: Traffic.Start: INVALID_ARGUMENT: <message>" (one line: any
// newline in the daemon's message is folded into "; ").
std::string format_rpc_error(std::string_view rpc_name, const grpc::Status& status);

// A failed RPC, carried up to main() which prints it and exits.
class RpcError : public std::runtime_error {
 public:
  RpcError(std::string rpc_name, grpc::Status status);
  const std::string& rpc_name() const { return rpc_name_; }
  const grpc::Status& status() const { return status_; }
  int exit_code() const { return exit_code_for(status_.error_code()); }

 private:
  std::string rpc_name_;
  grpc::Status status_;
};

// "unix:///p", "unix:p" and "host:port" pass through; a bare path
// ("/run/x.sock", "./x.sock") becomes "unix:<path>". Empty is a usage error.
std::string normalize_server_address(std::string_view address);

struct ClientOptions {
  std::string token;            // sent as "authorization: Bearer <token>" when set
  bool tls = false;
  std::string tls_ca_file;      // trusted roots (default: the system's)
  std::string tls_cert_file;    // client certificate chain, with tls_key_file
  std::string tls_key_file;
  std::string tls_server_name;  // expected name in the server certificate
  // Per server address, when tls_server_name is empty: daemons found behind a
  // Service name expect that name (discover.h).
  std::map<std::string, std::string> tls_server_names;
  std::int64_t timeout_ns = 10'000'000'000;  // per unary RPC; streams have none
};

// Reads the token file (trailing whitespace removed). Throws UsageError.
std::string read_token_file(const std::string& path);

// A connection to one daemon with stubs for every service.
class Client {
 public:
  // Throws UsageError when TLS files cannot be read.
  Client(std::string address, const ClientOptions& options);

  const std::string& address() const { return address_; }
  // For code that makes its own stubs (the conformance suite's DUT access).
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  metaroce::v1::Daemon::Stub& daemon() { return *daemon_; }
  metaroce::v1::Connections::Stub& connections() { return *connections_; }
  metaroce::v1::Memory::Stub& memory() { return *memory_; }
  metaroce::v1::Fabric::Stub& fabric() { return *fabric_; }
  metaroce::v1::Traffic::Stub& traffic() { return *traffic_; }
  metaroce::v1::Capture::Stub& capture() { return *capture_; }

  // Adds the token and, unless `streaming`, the per-call deadline.
  void prepare(grpc::ClientContext& context, bool streaming) const;

  // One unary call: `invoke(context, response)` runs the stub method; a
  // failed status throws RpcError naming `rpc_name` ("Daemon.GetInfo").
  template <typename Response, typename Invoke>
  Response call(std::string_view rpc_name, Invoke&& invoke) const {
    grpc::ClientContext context;
    prepare(context, /*streaming=*/false);
    Response response;
    grpc::Status status = invoke(&context, &response);
    if (!status.ok()) throw RpcError(std::string(rpc_name), std::move(status));
    return response;
  }

 private:
  std::string address_;
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<metaroce::v1::Daemon::Stub> daemon_;
  std::unique_ptr<metaroce::v1::Connections::Stub> connections_;
  std::unique_ptr<metaroce::v1::Memory::Stub> memory_;
  std::unique_ptr<metaroce::v1::Fabric::Stub> fabric_;
  std::unique_ptr<metaroce::v1::Traffic::Stub> traffic_;
  std::unique_ptr<metaroce::v1::Capture::Stub> capture_;
};

// protobuf JSON with the proto field names and every primitive field, either
// pretty-printed or on one line (for NDJSON streams).
std::string to_json(const google::protobuf::Message& message, bool pretty = true);

// Ctrl-C / SIGTERM handling for a process that also runs gRPC threads.
// install() blocks the signals in every thread (call it first in main,
// before any gRPC thread exists) and waits for them on a dedicated thread.
// Without a handler a signal ends the process at once (exit 130/143); with
// one, the first signal calls the handler and a second ends the process.
namespace interrupts {
void install();
// While alive, the first Ctrl-C runs `handler` (on the signal thread).
class Scope {
 public:
  explicit Scope(std::function<void()> handler);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};
// Called before the process is ended by a signal (e.g. to clear a progress bar).
void set_last_words(std::function<void()> last_words);
}  // namespace interrupts

}  // namespace metarocectl
