#include "scenario_requests.h"

#include <algorithm>
#include <map>
#include <string>

#include "metaroce/api/link_patch_codec.h"
#include "metaroce/api/operation_codec.h"
#include "metaroce/capture/limits.h"
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

std::vector<LiveCaptureRequest> live_capture_requests(const ms::Scenario& s, const ms::RunPlan& plan,
                                                      const ms::PlannedCapture& c, uint64_t origin_unix_ns) {
  using W = ms::CaptureWindow::Where;
  struct Part {
    std::vector<std::string> names;
    std::vector<v1::CapturePoint> points;
  };
  std::map<std::string, Part> by_address;
  if (c.window.where != W::kEndpoints) {
    Part& p = by_address[s.fabric];
    p.names.push_back("fabric");
    for (auto pt : {v1::CAPTURE_POINT_FABRIC_IN, v1::CAPTURE_POINT_FABRIC_OUT, v1::CAPTURE_POINT_FABRIC_DROPPED})
      p.points.push_back(pt);
  }
  if (c.window.where != W::kFabric) {
    std::vector<std::string> hosts;  // the run's hosts, in host-index order
    for (const std::string& h : s.host_order)
      for (const ms::JobSpec& js : plan.jobs)
        if ((js.job->from == h || js.job->to == h) && std::find(hosts.begin(), hosts.end(), h) == hosts.end())
          hosts.push_back(h);
    for (const std::string& h : hosts) {
      Part& p = by_address[s.hosts.at(h)];
      p.names.insert(p.names.begin(), h);  // "h0+fabric": the host first
      p.points.push_back(v1::CAPTURE_POINT_ENDPOINT_RX);
      p.points.push_back(v1::CAPTURE_POINT_ENDPOINT_TX);
    }
  }
  // The window's file name without ".pcapng" and "captures/", shortened to
  // leave room for "-<daemon>.pcapng" within the daemon's name limit.
  std::string stem = c.file.substr(c.file.rfind('/') + 1);
  stem.resize(stem.size() - 7);
  std::vector<LiveCaptureRequest> out;
  for (const auto& [address, part] : by_address) {
    LiveCaptureRequest r;
    for (const std::string& n : part.names) r.daemon += (r.daemon.empty() ? "" : "+") + n;
    r.address = address;
    std::string tag = r.daemon;
    std::replace(tag.begin(), tag.end(), '+', '-');
    const size_t room = metaroce::capture::kMaxFileNameChars - 7 - 1 - tag.size();
    v1::CaptureSpec& spec = *r.start.mutable_spec();
    spec.set_file(stem.substr(0, std::min(stem.size(), room)) + "-" + tag + ".pcapng");
    for (uint32_t p : c.window.planes) spec.add_planes(p);
    for (v1::CapturePoint p : part.points) spec.add_points(p);
    spec.set_snap_length(c.window.snap_length);
    spec.set_start_unix_ns(origin_unix_ns + static_cast<uint64_t>(c.from_ns));
    spec.set_stop_unix_ns(origin_unix_ns + static_cast<uint64_t>(c.to_ns));
    spec.set_max_bytes(ms::kMaxCaptureBytesPerDaemon);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace metarocectl
