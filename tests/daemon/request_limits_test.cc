// Bounds on gRPC requests (daemon/src/request_limits.h): every string field of
// every request, at any depth, is checked once before a call reaches the core,
// and errors quote only a short prefix of a bad value.
#include "request_limits.h"

#include <gtest/gtest.h>

#include "metaroce/v1/connection.pb.h"
#include "metaroce/v1/daemon.pb.h"
#include "metaroce/v1/traffic.pb.h"

namespace metaroce::daemon {
namespace {

TEST(RequestLimits, LongStringsAnywhereAreRefusedNamingTheField) {
  v1::AcceptRequest accept;
  accept.set_requester_name("h0");
  accept.set_requester_address("unix:///run/metaroce/h0.sock");
  EXPECT_TRUE(check_request_strings(accept).ok());
  accept.set_requester_name(std::string(kMaxRequestStringBytes, 'n'));
  EXPECT_TRUE(check_request_strings(accept).ok()) << "exactly the limit is allowed";
  accept.set_requester_name(std::string(1 << 20, 'n'));  // the 1 MB name that made GetCounters 7.3 MB
  const grpc::Status s = check_request_strings(accept);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("requester_name: at most 256 bytes (got 1048576, starting 'nnnn", 0), 0u)
      << s.error_message();
  EXPECT_LT(s.error_message().size(), 200u) << "the error quotes a prefix, not the value";

  // Nested and repeated: a job's peer list.
  v1::StartJobRequest start;
  start.mutable_spec()->add_peers("unix:///run/metaroce/h1.sock");
  start.mutable_spec()->add_peers(std::string(300, 'p'));
  EXPECT_EQ(check_request_strings(start).error_message().rfind("spec.peers[1]: at most 256 bytes", 0), 0u)
      << check_request_strings(start).error_message();
  start.mutable_spec()->clear_peers();
  for (size_t i = 0; i <= kMaxRepeatedStrings; ++i) start.mutable_spec()->add_peers("unix:///p");
  EXPECT_EQ(check_request_strings(start).error_message(), "spec.peers: at most 64 entries (got 65)");
}

TEST(RequestLimits, ControlCharactersAreRefusedAndShownAsQuestionMarks) {
  v1::CreateConnectionRequest create;
  create.set_peer_address("unix:///run/metaroce/h1.sock\nforged log line");
  const grpc::Status s = check_request_strings(create);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "peer_address: must not hold control characters (got 'unix:///run/metaroce/h1.sock?forged log line')");
  const std::string msg = s.error_message();  // by value: one copy, one pair of iterators
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(RequestLimits, QuotedValuesAreShortAndSayHowLongTheyWere) {
  EXPECT_EQ(quote_value("abc"), "'abc'");
  const std::string q = quote_value(std::string(5000, 'x'));
  EXPECT_EQ(q, "'" + std::string(kMaxQuotedValueChars, 'x') + "'... (5000 bytes)");
  EXPECT_EQ(quote_value(std::string("a\tb\x7f", 4)), "'a?b?'");
}

}  // namespace
}  // namespace metaroce::daemon
