// The connection parameters a caller chooses, declared once: name, unit,
// allowed range, defaults and a one-line doc. metaroced's config file, its gRPC
// validation of ConnectionParams, metarocectl's flags and their help, scenario
// files and the engine's own validation (transport::validate) all read this
// table, so a value one layer accepts is a value every layer below accepts.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace metaroce::transport {

struct ConnectionParam {
  std::string_view name;  // as in ConnectionParams (proto) and metarocectl's flag (--min-rto for min_rto_ns)
  std::string_view unit;  // "ns", "bytes", or "" for a count
  int64_t min = 0, max = 0;
  int64_t multiple_of = 1;
  // What a connection gets when its creator leaves the parameter out, through
  // the daemon, metarocectl and scenario files (daemon config keys that set it
  // start from this too) ...
  int64_t default_value = 0;
  // ... and as a ConnectionConfig / TransportTuning member initialiser, for
  // direct users of the engine: the simulator, engine tests and benches. The
  // two differ only where the table says why (the timer floors, mtu, depth).
  int64_t engine_default = 0;
  std::string_view doc;

  constexpr bool accepts(int64_t v) const { return v >= min && v <= max && v % multiple_of == 0; }
  // "[10000, 50000000] ns" / "[256, 8192] bytes, a multiple of 64"
  std::string range_text() const;
  // "<field>: must be in [lo, hi] unit (got v)": the one refusal every layer
  // gives, each naming its own field (params.min_rto_ns, tuning.min_rto_ns, ...).
  std::string refusal(std::string_view field, int64_t got) const;
};

// MetaRoCE paths spread over the planes. 0 (default_value) lets the daemon and
// the scenario engine pick kDefaultPathsPerPlane per plane; RoCEv2 has 1.
inline constexpr int64_t kDefaultPathsPerPlane = 2;
inline constexpr ConnectionParam kParamPaths{
    .name = "paths", .unit = "", .min = 1, .max = 64, .default_value = 0, .engine_default = 0,
    .doc = "paths spread over the planes (default 2 per plane; rocev2: 1)"};

// 256 streams bound the responder's region (streams x 2 x queue_depth slots)
// well before the engine's 16-bit stream ids would.
inline constexpr ConnectionParam kParamStreams{
    .name = "streams", .unit = "", .min = 1, .max = 256, .default_value = 1, .engine_default = 1,
    .doc = "independent ordered streams"};

// ConnectionParams.queue_depth is ConnectionConfig.max_outstanding_per_stream.
// The engine's default of 64 is what its tests and benches were tuned with;
// the daemon, metarocectl and scenario jobs have always asked for 16.
inline constexpr ConnectionParam kParamQueueDepth{
    .name = "queue_depth", .unit = "", .min = 1, .max = 1024, .default_value = 16, .engine_default = 64,
    .doc = "outstanding requests per stream"};

// The daemon's default (its endpoint.mtu_payload) fits the default 2048-byte
// AF_XDP frame (ceiling frame_size - 128); the engine's is a 4 KiB page.
// Scenario files have their own topology default, scenario::kDefaultMtuPayload.
inline constexpr ConnectionParam kParamMtuPayload{
    .name = "mtu_payload_bytes", .unit = "bytes", .min = 256, .max = 8192, .multiple_of = 64,
    .default_value = 1024, .engine_default = 4096, .doc = "payload bytes per packet, same on both ends"};

inline constexpr ConnectionParam kParamMaxMessage{
    .name = "max_message_bytes", .unit = "bytes", .min = 1, .max = 16 << 20, .default_value = 1 << 20,
    .engine_default = 1 << 20, .doc = "largest message"};

// The timer floors. Below 10 us a timer is scheduler noise; above 50 ms (the
// engine's default max_rto_ns, which clamps every RTO) a floor would be
// clamped away. On a host's real clock a worker can be descheduled for a
// millisecond, so the daemon's defaults are 2 ms / 500 us; the engine's are for
// an ideal, virtual clock (the simulator): 200 us / 20 us.
inline constexpr ConnectionParam kParamMinRto{
    .name = "min_rto_ns", .unit = "ns", .min = 10'000, .max = 50'000'000, .default_value = 2'000'000,
    .engine_default = 200'000, .doc = "minimum retransmission timeout"};
// Not in ConnectionParams: the daemon's endpoint.min_pto_ns, capped per
// connection at its min_rto_ns.
inline constexpr ConnectionParam kParamMinPto{
    .name = "min_pto_ns", .unit = "ns", .min = 10'000, .max = 50'000'000, .default_value = 500'000,
    .engine_default = 20'000, .doc = "tail-loss probe floor"};

// Not in ConnectionParams: connections per peer of a traffic job
// (JobSpec.connections, metarocectl traffic --connections, scenario jobs).
inline constexpr ConnectionParam kParamJobConnections{
    .name = "connections", .unit = "", .min = 1, .max = 16384, .default_value = 1, .engine_default = 1,
    .doc = "connections per peer of a traffic job"};

inline constexpr std::array<const ConnectionParam*, 7> kConnectionParams{
    &kParamPaths, &kParamStreams, &kParamQueueDepth, &kParamMtuPayload, &kParamMaxMessage, &kParamMinRto, &kParamMinPto};

}  // namespace metaroce::transport
