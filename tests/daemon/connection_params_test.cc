// Every connection parameter of the one table (transport/connection_params.h)
// at its edges - min - 1, min, max, max + 1 (and min + 1 where values are
// multiples) - through every layer it passes: the daemon's config parser, the
// gRPC validation of ConnectionParams (resolve_connection_params), and the
// engine (connection_config -> Endpoint::create_connection, and
// transport::validate on its own field). Each layer must accept exactly what
// the table accepts, and each refusal names the layer's field and the range.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core.h"
#include "metaroce/daemon/config.h"
#include "metaroce/transport/connection_params.h"
#include "metaroce/transport/endpoint.h"
#include "metaroce/v1/connection.pb.h"

namespace metaroce::daemon {
namespace {

namespace mt = metaroce::transport;

// An endpoint whose frame and region hold every value the table allows, so
// only the parameter under test can be refused.
EndpointSection roomy_endpoint() {
  EndpointSection e;
  e.datapath = "udp";
  e.frame_size = 9216;
  e.max_region_bytes = 1ull << 40;
  return e;
}
constexpr uint32_t kPlanes = 2;

std::vector<int64_t> edges(const mt::ConnectionParam& p) {
  std::vector<int64_t> v{p.min - 1, p.min, p.max, p.max + 1};
  if (p.multiple_of > 1) v.push_back(p.min + 1);
  return v;
}

// The engine's half of a connection the daemon would create from `params`.
std::string engine_refusal(const v1::ConnectionParams& params, const EndpointSection& e) {
  mt::EndpointConfig ec;
  ec.ip = 0x0a000001;
  mt::Endpoint ep(ec);
  const mt::ConnectionConfig cc = connection_config(params, e, 1, 2, 0x0a000002, {}, 4794, kPlanes);
  std::string err;
  const bool created = ep.create_connection(cc, &err).has_value();
  return created ? "" : (err.empty() ? "refused" : err);
}

struct GrpcField {
  const mt::ConnectionParam* param;
  std::function<void(v1::ConnectionParams&, int64_t)> set;
  std::function<int64_t(const v1::ConnectionParams&)> get;
  std::function<void(mt::ConnectionConfig&, int64_t)> set_engine;
  std::string engine_field;
};

std::vector<GrpcField> grpc_fields() {
  return {
      {&mt::kParamPaths, [](v1::ConnectionParams& p, int64_t v) { p.set_paths(static_cast<uint32_t>(v)); },
       [](const v1::ConnectionParams& p) -> int64_t { return p.paths(); },
       [](mt::ConnectionConfig& c, int64_t v) { c.paths.assign(static_cast<size_t>(v), mt::PathConfig{}); },
       "paths (count)"},
      {&mt::kParamStreams, [](v1::ConnectionParams& p, int64_t v) { p.set_streams(static_cast<uint32_t>(v)); },
       [](const v1::ConnectionParams& p) -> int64_t { return p.streams(); },
       [](mt::ConnectionConfig& c, int64_t v) { c.streams = static_cast<uint16_t>(v); }, "streams"},
      {&mt::kParamQueueDepth, [](v1::ConnectionParams& p, int64_t v) { p.set_queue_depth(static_cast<uint32_t>(v)); },
       [](const v1::ConnectionParams& p) -> int64_t { return p.queue_depth(); },
       [](mt::ConnectionConfig& c, int64_t v) {
         c.max_outstanding_per_stream = static_cast<uint32_t>(v);
         c.recv_window_messages = std::max<uint32_t>(c.max_outstanding_per_stream, 128);
       },
       "max_outstanding_per_stream"},
      {&mt::kParamMtuPayload, [](v1::ConnectionParams& p, int64_t v) { p.set_mtu_payload_bytes(static_cast<uint32_t>(v)); },
       [](const v1::ConnectionParams& p) -> int64_t { return p.mtu_payload_bytes(); },
       [](mt::ConnectionConfig& c, int64_t v) { c.mtu_payload = static_cast<uint32_t>(v); }, "mtu_payload"},
      {&mt::kParamMaxMessage, [](v1::ConnectionParams& p, int64_t v) { p.set_max_message_bytes(static_cast<uint32_t>(v)); },
       [](const v1::ConnectionParams& p) -> int64_t { return p.max_message_bytes(); },
       [](mt::ConnectionConfig& c, int64_t v) { c.max_message_bytes = static_cast<uint32_t>(v); }, "max_message_bytes"},
      {&mt::kParamMinRto, [](v1::ConnectionParams& p, int64_t v) { p.set_min_rto_ns(v); },
       [](const v1::ConnectionParams& p) -> int64_t { return p.min_rto_ns(); },
       [](mt::ConnectionConfig& c, int64_t v) { c.tuning.min_rto_ns = v; }, "tuning.min_rto_ns"},
  };
}

TEST(ConnectionParams, EveryLayerAcceptsExactlyTheTablesRangeAndNamesFieldAndRange) {
  const EndpointSection e = roomy_endpoint();
  for (const GrpcField& f : grpc_fields()) {
    const mt::ConnectionParam& p = *f.param;
    for (const int64_t v : edges(p)) {
      SCOPED_TRACE(std::string(p.name) + " = " + std::to_string(v));
      const bool table = p.accepts(v);

      // The engine on its own field.
      mt::ConnectionConfig cc;
      cc.local_id = cc.remote_id = 1, cc.peer_ip = 0x0a000001;
      cc.paths.push_back({});
      f.set_engine(cc, v);
      const std::string engine = mt::validate(cc);
      EXPECT_EQ(engine.empty(), table) << engine;
      if (!table) {
        EXPECT_EQ(engine, p.refusal(f.engine_field, v));
      }

      // gRPC. 0 is "the default" in ConnectionParams, so min - 1 = 0 resolves
      // to the default, which the engine then takes.
      v1::ConnectionParams in, out;
      in.set_max_message_bytes(4096);
      in.set_base_src_port(49152);
      f.set(in, v);
      const grpc::Status s = resolve_connection_params(in, e, kPlanes, &out);
      if (v == 0) {
        ASSERT_TRUE(s.ok()) << s.error_message();
        const int64_t want = &p == &mt::kParamPaths ? mt::kDefaultPathsPerPlane * kPlanes : p.default_value;
        EXPECT_EQ(f.get(out), want);
      } else {
        EXPECT_EQ(s.ok(), table) << s.error_message();
        if (!table) {
          EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
          EXPECT_EQ(s.error_message(), p.refusal("params." + std::string(p.name), v));
        }
      }
      // What gRPC accepts, the engine creates.
      if (s.ok()) {
        EXPECT_EQ(engine_refusal(out, e), "");
      }
    }
  }
}

// The timer floors' edges in the config file, and the config's values through
// the daemon's gRPC defaults into the engine (min_pto_ns is capped per
// connection at its min_rto_ns, so both floors reach the engine).
TEST(ConnectionParams, ConfigTimerFloorsAtTheEdgesAgreeWithGrpcAndTheEngine) {
  for (const mt::ConnectionParam* p : {&mt::kParamMinRto, &mt::kParamMinPto}) {
    const std::string key = "endpoint." + std::string(p->name);
    for (const int64_t v : edges(*p)) {
      SCOPED_TRACE(key + " = " + std::to_string(v));
      std::string err;
      const auto c = parse_daemon_yaml("role: endpoint\nendpoint:\n  interfaces: [p0]\n  address: 10.1.0.1\n"
                                       "  mac: 02:00:0a:01:00:01\n  " +
                                           std::string(p->name) + ": " + std::to_string(v) + "\n",
                                       "t.yaml", &err);
      EXPECT_EQ(c.has_value(), p->accepts(v)) << err;
      if (!c) {
        EXPECT_NE(err.find(key + ": must be a duration in " + p->range_text()), std::string::npos) << err;
        continue;
      }
      v1::ConnectionParams out;
      v1::ConnectionParams in;
      in.set_base_src_port(49152);
      const grpc::Status s = resolve_connection_params(in, *c->endpoint, kPlanes, &out);
      ASSERT_TRUE(s.ok()) << s.error_message();
      EXPECT_EQ(engine_refusal(out, *c->endpoint), "");
    }
  }
}

// The config's mtu_payload at the table's edges (with a frame that holds 8192).
TEST(ConnectionParams, ConfigMtuPayloadAtTheEdgesIsTheTables) {
  const mt::ConnectionParam& p = mt::kParamMtuPayload;
  for (const int64_t v : edges(p)) {
    SCOPED_TRACE(v);
    std::string err;
    const auto c = parse_daemon_yaml("role: endpoint\nendpoint:\n  datapath: udp\n  interfaces: [p0]\n"
                                     "  address: 10.1.0.1\n  mac: 02:00:0a:01:00:01\n  frame_size: 9216\n"
                                     "  mtu_payload: " + std::to_string(v) + "\n",
                                     "t.yaml", &err);
    EXPECT_EQ(c.has_value(), p.accepts(v)) << err;
    if (!c) {
      EXPECT_EQ(err, "t.yaml:8: " + p.refusal("endpoint.mtu_payload", v));
    }
  }
}

// The engine refuses the timer floor it does not check through gRPC too.
TEST(ConnectionParams, EngineRefusesMinPtoOutsideTheTable) {
  const mt::ConnectionParam& p = mt::kParamMinPto;
  for (const int64_t v : edges(p)) {
    mt::ConnectionConfig cc;
    cc.local_id = cc.remote_id = 1, cc.peer_ip = 0x0a000001;
    cc.paths.push_back({});
    cc.tuning.min_pto_ns = v;
    const std::string err = mt::validate(cc);
    EXPECT_EQ(err.empty(), p.accepts(v)) << v << ": " << err;
    if (!p.accepts(v)) {
      EXPECT_EQ(err, p.refusal("tuning.min_pto_ns", v));
    }
  }
}

// The defaults stated in the table are the ones each layer starts from.
TEST(ConnectionParams, EachLayersDefaultIsTheTables) {
  const mt::ConnectionConfig cc;
  EXPECT_EQ(cc.streams, mt::kParamStreams.engine_default);
  EXPECT_EQ(cc.max_outstanding_per_stream, mt::kParamQueueDepth.engine_default);
  EXPECT_EQ(cc.mtu_payload, mt::kParamMtuPayload.engine_default);
  EXPECT_EQ(cc.max_message_bytes, mt::kParamMaxMessage.engine_default);
  EXPECT_EQ(cc.tuning.min_rto_ns, mt::kParamMinRto.engine_default);
  EXPECT_EQ(cc.tuning.min_pto_ns, mt::kParamMinPto.engine_default);
  const EndpointSection e;
  EXPECT_EQ(e.mtu_payload, mt::kParamMtuPayload.default_value);
  EXPECT_EQ(e.min_rto_ns, mt::kParamMinRto.default_value);
  EXPECT_EQ(e.min_pto_ns, mt::kParamMinPto.default_value);
  for (const mt::ConnectionParam* p : mt::kConnectionParams) {
    if (p == &mt::kParamPaths) continue;  // 0: per plane, resolved by the daemon
    EXPECT_TRUE(p->accepts(p->default_value)) << p->name;
    EXPECT_TRUE(p->accepts(p->engine_default)) << p->name;
  }
}

}  // namespace
}  // namespace metaroce::daemon
