// Bounds on what a gRPC request may carry, checked once for every call before
// it reaches DaemonCore, and on how much of a bad value an error quotes. A
// string is an address, a name, a label or an enum-like word; none needs more
// than kMaxRequestStringBytes, and an unbounded one would be stored and echoed
// back (in connection lists, counters and error messages) to every client.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace metaroce::daemon {

inline constexpr size_t kMaxRequestStringBytes = 256;   // every string field, in bytes
inline constexpr size_t kMaxRepeatedStrings = 64;       // every repeated string field, in entries
inline constexpr size_t kMaxQuotedValueChars = 64;      // how much of a bad value an error message quotes
// Open Watch streams (Daemon.Watch and Traffic.Watch together). The synchronous
// server holds a thread per open stream; 2,000 streams used 2,014 threads.
inline constexpr int kMaxWatchStreams = 64;

// OK, or INVALID_ARGUMENT naming the first string field (its path, e.g.
// "spec.peers[3]") that is longer than kMaxRequestStringBytes, holds a control
// character, or is one of more than kMaxRepeatedStrings entries.
grpc::Status check_request_strings(const google::protobuf::Message& request);

// 'value' for an error message: at most kMaxQuotedValueChars characters, control
// characters shown as '?', and "... (N bytes)" when cut.
std::string quote_value(std::string_view value);

// A request the server cannot decode (not protobuf, or a string field that is
// not UTF-8) never reaches a handler; gRPC answers it with INTERNAL and an
// empty message, which reads as a daemon fault. This interceptor turns that
// answer into INVALID_ARGUMENT saying which method's request could not be
// decoded. Installed on the server (ServerBuilder::experimental()).
class UndecodableRequestInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace metaroce::daemon
