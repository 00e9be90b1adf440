// Exit codes, error lines, addresses, tokens and JSON output.
#include "client.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "metaroce/v1/traffic.pb.h"
#include "units.h"

namespace metarocectl {
namespace {

using grpc::StatusCode;

TEST(ExitCodes, FromStatusCodes) {
  EXPECT_EQ(exit_code_for(StatusCode::OK), 0);
  for (StatusCode refused : {StatusCode::INVALID_ARGUMENT, StatusCode::NOT_FOUND, StatusCode::FAILED_PRECONDITION,
                             StatusCode::ALREADY_EXISTS, StatusCode::RESOURCE_EXHAUSTED, StatusCode::OUT_OF_RANGE,
                             StatusCode::UNIMPLEMENTED}) {
    EXPECT_EQ(exit_code_for(refused), 3) << status_code_name(refused);
  }
  for (StatusCode unreachable : {StatusCode::UNAVAILABLE, StatusCode::UNAUTHENTICATED, StatusCode::PERMISSION_DENIED,
                                 StatusCode::DEADLINE_EXCEEDED}) {
    EXPECT_EQ(exit_code_for(unreachable), 4) << status_code_name(unreachable);
  }
  for (StatusCode other : {StatusCode::CANCELLED, StatusCode::UNKNOWN, StatusCode::ABORTED, StatusCode::INTERNAL,
                           StatusCode::DATA_LOSS}) {
    EXPECT_EQ(exit_code_for(other), 5) << status_code_name(other);
  }
  EXPECT_EQ(kExitUsage, 2);
  EXPECT_EQ(kExitResultFailed, 1);
}

TEST(ErrorLine, OneLineWithRpcAndCodeName) {
  const grpc::Status status(StatusCode::INVALID_ARGUMENT, "params.paths: must be in [1, 64] (got 99)");
  EXPECT_EQ(format_rpc_error("Traffic.Start", status),
            "metarocectl: Traffic.Start: INVALID_ARGUMENT: params.paths: must be in [1, 64] (got 99)");
  const grpc::Status multi(StatusCode::UNAVAILABLE, "first\nsecond\n");
  EXPECT_EQ(format_rpc_error("Daemon.GetInfo", multi), "metarocectl: Daemon.GetInfo: UNAVAILABLE: first; second");
  const RpcError error("Fabric.Set", grpc::Status(StatusCode::NOT_FOUND, "plane: 7 does not exist"));
  EXPECT_STREQ(error.what(), "metarocectl: Fabric.Set: NOT_FOUND: plane: 7 does not exist");
  EXPECT_EQ(error.exit_code(), 3);
}

TEST(StatusNames, AllCodes) {
  EXPECT_EQ(status_code_name(StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
  EXPECT_EQ(status_code_name(StatusCode::RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(status_code_name(StatusCode::DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
}

TEST(Addresses, Normalised) {
  EXPECT_EQ(normalize_server_address("unix:///run/metaroce/metaroced.sock"), "unix:///run/metaroce/metaroced.sock");
  EXPECT_EQ(normalize_server_address("unix:relative.sock"), "unix:relative.sock");
  EXPECT_EQ(normalize_server_address("/run/x.sock"), "unix:/run/x.sock");
  EXPECT_EQ(normalize_server_address("./x.sock"), "unix:./x.sock");
  EXPECT_EQ(normalize_server_address("10.0.0.1:50051"), "10.0.0.1:50051");
  EXPECT_EQ(normalize_server_address("fabric:50051"), "fabric:50051");
  EXPECT_THROW(normalize_server_address(""), UsageError);
}

TEST(Tokens, FileIsTrimmed) {
  const std::string path = ::testing::TempDir() + "/metarocectl_token";
  {
    std::ofstream out(path);
    out << "s3cret\n\n";
  }
  EXPECT_EQ(read_token_file(path), "s3cret");
  {
    std::ofstream out(path);
    out << " \n";
  }
  EXPECT_THROW(read_token_file(path), UsageError);
  std::remove(path.c_str());
  EXPECT_THROW(read_token_file(path), UsageError);
}

TEST(Client, UnreachableSocketIsUnavailable) {
  ClientOptions options;
  options.timeout_ns = 2'000'000'000;
  Client client("unix:///nonexistent/metaroced.sock", options);
  try {
    client.call<metaroce::v1::DaemonInfo>("Daemon.GetInfo", [&](auto* ctx, auto* r) {
      return client.daemon().GetInfo(ctx, metaroce::v1::GetInfoRequest{}, r);
    });
    FAIL() << "call succeeded";
  } catch (const RpcError& e) {
    EXPECT_EQ(e.exit_code(), 4) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("metarocectl: Daemon.GetInfo: UNAVAILABLE: ", 0), 0u) << e.what();
  }
}

TEST(Json, ProtoNamesAndEveryPrimitive) {
  metaroce::v1::JobProgress p;
  p.set_job_id(3);
  p.set_goodput_bps(12.345678901234e9);
  const std::string pretty = to_json(p, true);
  EXPECT_NE(pretty.find("\"job_id\": \"3\""), std::string::npos) << pretty;
  EXPECT_NE(pretty.find("\"retransmits\": \"0\""), std::string::npos) << pretty;  // defaults printed
  EXPECT_NE(pretty.find("\"loss_seen\": 0"), std::string::npos) << pretty;
  EXPECT_NE(pretty.find("12345678901.234"), std::string::npos) << pretty;  // no rounding
  EXPECT_NE(pretty.find('\n'), std::string::npos);
  const std::string line = to_json(p, false);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.front(), '{');
  EXPECT_EQ(line.back(), '}');
}

}  // namespace
}  // namespace metarocectl
