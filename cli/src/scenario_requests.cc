#include "scenario_requests.h"

#include <string>

#include "metaroce/api/link_patch_codec.h"
#include "metaroce/api/operation_codec.h"
#include "metaroce/scenario/sim_backend.h"

namespace v1 = metaroce::v1;
namespace ms = metaroce::scenario;

namespace metarocectl {

v1::LinkPatch live_patch(const ms::FabricChange& c) {
  // Live time is scenario time: time_scale 1.
  return metaroce::api::encode_link_patch(ms::emulator_patch(c, 1.0));
}

std::vector<v1::SetLinksRequest> live_setup(const ms::RunPlan& plan) {
  std::vector<v1::SetLinksRequest> out;
  for (const ms::FabricChange& c : plan.setup) {
    v1::SetLinksRequest r;
    *r.mutable_selector() = metaroce::api::encode_link_selector(ms::emulator_selector(c.selector));
    *r.mutable_patch() = live_patch(c);
    out.push_back(std::move(r));
  }
  return out;
}

v1::LoadTimelineRequest live_timeline(const ms::RunPlan& plan) {
  v1::LoadTimelineRequest req;
  for (const ms::FabricChange& c : plan.timeline) {
    auto* ev = req.add_events();
    ev->set_at_ns(c.at_ns);
    *ev->mutable_selector() = metaroce::api::encode_link_selector(ms::emulator_selector(c.selector));
    ev->set_label(c.label);
    const bool only_up_down = c.up && !c.flap && c.set.empty();
    if (only_up_down && *c.up) ev->set_up(true);
    else if (only_up_down) ev->set_down(true);
    else *ev->mutable_set() = live_patch(c);
  }
  return req;
}

v1::StartJobRequest live_job(const ms::Scenario& s, const ms::JobSpec& js, const std::vector<uint16_t>& src_ports) {
  const ms::Job& j = *js.job;
  v1::StartJobRequest req;
  v1::JobSpec& spec = *req.mutable_spec();
  // The scenario parser accepted only names of the operation table.
  spec.set_operation(metaroce::api::encode_operation(metaroce::transport::parse_operation(j.op).value()));
  spec.add_peers(s.hosts.at(j.to));
  spec.add_message_bytes(js.message_bytes);
  spec.set_connections(js.connections);
  v1::ConnectionParams& params = *spec.mutable_params();
  params.set_transport(js.rocev2() ? v1::TRANSPORT_ROCEV2 : v1::TRANSPORT_METAROCE);
  params.set_paths(js.paths);
  params.set_streams(j.streams);
  params.set_queue_depth(j.queue_depth);
  params.set_mtu_payload_bytes(s.mtu_payload);
  spec.set_duration_ns(s.duration_ns);
  spec.set_interval_ns(s.interval_ns);
  spec.set_seed(js.seed);
  for (uint16_t port : src_ports) spec.add_path_src_ports(port);
  return req;
}

}  // namespace metarocectl
