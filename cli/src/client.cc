#include "client.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>
#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "units.h"

namespace metarocectl {

int exit_code_for(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return kExitOk;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::UNIMPLEMENTED:
      return kExitRefused;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kExitUnreachable;
    default:  // CANCELLED, UNKNOWN, ABORTED, INTERNAL, DATA_LOSS
      return kExitInternal;
  }
}

std::string status_code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return fmt::format("CODE_{}", static_cast<int>(code));
  }
}

std::string format_rpc_error(std::string_view rpc_name, const grpc::Status& status) {
  std::string message = status.error_message();
  // One line per error, so scripts can rely on it.
  std::string folded;
  for (std::size_t i = 0; i < message.size(); ++i) {
    const char c = message[i];
    if (c == '\r') continue;
    if (c == '\n') {
      if (i + 1 < message.size()) folded += "; ";
      continue;
    }
    folded += c;
  }
  if (folded.empty()) folded = "(no message)";
  return fmt::format("metarocectl: {}: {}: {}", rpc_name, status_code_name(status.error_code()),
                     folded);
}

RpcError::RpcError(std::string rpc_name, grpc::Status status)
    : std::runtime_error(format_rpc_error(rpc_name, status)),
      rpc_name_(std::move(rpc_name)),
      status_(std::move(status)) {}

std::string normalize_server_address(std::string_view address) {
  if (address.empty()) {
    throw UsageError("--server: empty address (allowed: unix:///path, unix:path or host:port)");
  }
  const bool looks_like_path = address.front() == '/' || address.substr(0, 2) == "./" ||
                               address.substr(0, 3) == "../";
  if (looks_like_path) return fmt::format("unix:{}", address);
  return std::string(address);
}

namespace {

std::string read_file_or_throw(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("{}: cannot read \"{}\"", flag, path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string read_token_file(const std::string& path) {
  std::string token = read_file_or_throw("--token-file", path);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) throw UsageError(fmt::format("--token-file: \"{}\" is empty", path));
  return token;
}

Client::Client(std::string address, const ClientOptions& options)
    : address_(normalize_server_address(address)), options_(options) {
  grpc::ChannelArguments arguments;
  // A long job's result carries every interval; the 4 MiB default is small.
  arguments.SetMaxReceiveMessageSize(256 * 1024 * 1024);
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca_file.empty()) ssl.pem_root_certs = read_file_or_throw("--tls-ca", options.tls_ca_file);
    if (!options.tls_cert_file.empty())
      ssl.pem_cert_chain = read_file_or_throw("--tls-cert", options.tls_cert_file);
    if (!options.tls_key_file.empty())
      ssl.pem_private_key = read_file_or_throw("--tls-key", options.tls_key_file);
    credentials = grpc::SslCredentials(ssl);
    if (!options.tls_server_name.empty()) {
      arguments.SetSslTargetNameOverride(options.tls_server_name);
    } else if (const auto it = options.tls_server_names.find(address_); it != options.tls_server_names.end()) {
      arguments.SetSslTargetNameOverride(it->second);
    }
  } else {
    // The daemon decides whether it accepts plaintext TCP.
    credentials = grpc::InsecureChannelCredentials();
  }
  channel_ = grpc::CreateCustomChannel(address_, credentials, arguments);
  daemon_ = metaroce::v1::Daemon::NewStub(channel_);
  connections_ = metaroce::v1::Connections::NewStub(channel_);
  memory_ = metaroce::v1::Memory::NewStub(channel_);
  fabric_ = metaroce::v1::Fabric::NewStub(channel_);
  traffic_ = metaroce::v1::Traffic::NewStub(channel_);
  capture_ = metaroce::v1::Capture::NewStub(channel_);
}

void Client::prepare(grpc::ClientContext& context, bool streaming) const {
  // Per-call metadata rather than call credentials: gRPC refuses call
  // credentials on insecure channels, and unix sockets are insecure channels.
  if (!options_.token.empty()) context.AddMetadata("authorization", "Bearer " + options_.token);
  if (!streaming && options_.timeout_ns > 0) {
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::nanoseconds(options_.timeout_ns));
  }
}

std::string to_json(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  const auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) throw std::runtime_error("cannot convert to JSON: " + std::string(status.message()));
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// ---- interrupts -------------------------------------------------------------

namespace interrupts {
namespace {
std::mutex handler_mutex;  // held while the handler runs, so a Scope cannot die under it
std::function<void()> current_handler;
bool handler_fired = false;
std::mutex last_words_mutex;
std::function<void()> last_words_fn;

[[noreturn]] void die(int signal_number) {
  {
    std::lock_guard lock(last_words_mutex);
    if (last_words_fn) last_words_fn();
  }
  std::_Exit(128 + signal_number);
}
}  // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // inherited by every later thread
    std::thread([signals] {
      while (true) {
        int signal_number = 0;
        if (sigwait(&signals, &signal_number) != 0) continue;
        std::unique_lock lock(handler_mutex, std::try_to_lock);
        // A handler still running (lock held) or already fired: give up.
        if (!lock.owns_lock() || !current_handler || handler_fired) die(signal_number);
        handler_fired = true;
        current_handler();
      }
    }).detach();
  });
}

Scope::Scope(std::function<void()> handler) {
  std::lock_guard lock(handler_mutex);
  current_handler = std::move(handler);
  handler_fired = false;
}

Scope::~Scope() {
  std::lock_guard lock(handler_mutex);
  current_handler = nullptr;
  handler_fired = false;
}

void set_last_words(std::function<void()> last_words) {
  std::lock_guard lock(last_words_mutex);
  last_words_fn = std::move(last_words);
}

}  // namespace interrupts
}  // namespace metarocectl
