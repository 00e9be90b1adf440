// Fabric calls: API messages to emulator selectors and patches, and back.
#include <spdlog/spdlog.h>

#include <utility>

#include <time.h>

#include "core.h"
#include "metaroce/api/link_patch_codec.h"
#include "metaroce/daemon/fabric_api.h"
#include "request_limits.h"

namespace metaroce::daemon {
namespace {

constexpr int64_t kHourNs = 3'600'000'000'000;

// An emulator message "name: what" under the request's field path.
grpc::Status invalid_at(const std::string& field, const std::string& message) {
  const size_t colon = message.find(": ");
  if (colon == std::string::npos) return invalid(field, message);
  return invalid(field + "." + message.substr(0, colon), message.substr(colon + 2));
}

}  // namespace

// The API's selector is decoded here (names to enums, the API's shape rules),
// its patch by the shared codec (api::decode_link_patch); every range is the
// emulator's: validate(LinkSelector) and validate(LinkPatch) are the one
// authority, and their message is returned under the request's field path.
grpc::Status to_emulator_selector(const v1::LinkSelector& in, const FabricSection& f, emulator::LinkSelector* out,
                                  const std::string& field) {
  if (in.has_plane()) out->plane = in.plane();
  if (in.has_ecmp()) out->ecmp = in.ecmp();
  if (in.direction().empty()) out->direction = emulator::LinkSelector::Direction::kBoth;
  else if (auto d = emulator::parse_direction(in.direction())) out->direction = *d;
  else return invalid(field + ".direction", "must be both, a_to_b or b_to_a (got " + quote_value(in.direction()) + ")");
  if (in.has_host_a() != in.has_host_b()) return invalid(field + ".host_a", "host_a and host_b go together (a host pair)");
  if (in.has_host_a()) out->host_a = in.host_a(), out->host_b = in.host_b();
  emulator::FabricConfig shape;
  shape.hosts = f.hosts, shape.planes = f.planes, shape.ecmp_links = f.ecmp_links;
  if (auto e = emulator::validate(*out, shape)) return invalid_at(field, *e);
  if (out->host_a && *out->host_a > *out->host_b) std::swap(*out->host_a, *out->host_b);
  return grpc::Status::OK;
}

grpc::Status to_emulator_patch(const v1::LinkPatch& in, emulator::LinkPatch* out, const std::string& field) {
  if (auto e = api::decode_link_patch(in, out)) return invalid_at(field, *e);
  return grpc::Status::OK;
}

grpc::Status to_emulator_timeline(const v1::LoadTimelineRequest& req, const FabricSection& fabric,
                                  std::vector<emulator::TimelineEvent>* out) {
  if (req.events_size() > 10000) return invalid("events", "at most 10000 events (got " + std::to_string(req.events_size()) + ")");
  out->clear();
  for (int i = 0; i < req.events_size(); ++i) {
    const auto& e = req.events(i);
    const std::string f = "events[" + std::to_string(i) + "]";
    if (e.at_ns() < 0 || e.at_ns() > kHourNs * 24)
      return invalid(f + ".at_ns", "must be in [0, 86400000000000] (got " + std::to_string(e.at_ns()) + ")");
    emulator::TimelineEvent te;
    te.at_ns = e.at_ns();
    if (auto s = to_emulator_selector(e.selector(), fabric, &te.selector, f + ".selector"); !s.ok()) return s;
    switch (e.action_case()) {
      case v1::TimelineEvent::kSet:
        if (auto s = to_emulator_patch(e.set(), &te.patch, f + ".set"); !s.ok()) return s;
        if (te.patch == emulator::LinkPatch{}) return invalid(f + ".set", "names no field to change");
        break;
      case v1::TimelineEvent::kDown: te.patch.up = false; break;
      case v1::TimelineEvent::kUp: te.patch.up = true; break;
      default: return invalid(f + ".action", "must be one of set, down, up");
    }
    te.label = e.label().empty() ? (e.action_case() == v1::TimelineEvent::kSet ? "set" : e.action_case() == v1::TimelineEvent::kDown ? "down" : "up") : e.label();
    out->push_back(std::move(te));
  }
  return grpc::Status::OK;
}

namespace {

const char* loss_kind_name(emulator::LossConfig::Kind k) {
  using K = emulator::LossConfig::Kind;
  switch (k) {
    case K::kNone: return "none";
    case K::kBernoulli: return "bernoulli";
    case K::kCorrelated: return "correlated";
    case K::kGilbertElliott: return "gilbert_elliott";
    case K::kFourState: return "four_state";
    case K::kPattern: return "pattern";
  }
  return "?";
}

}  // namespace

grpc::Status DaemonCore::fabric_show(v1::FabricState* out) {
  if (auto s = need_fabric(); !s.ok()) return s;
  FabricSnapshot snap;
  if (!fabric_->snapshot(&snap)) return {grpc::StatusCode::UNAVAILABLE, "fabric worker did not answer"};
  const auto& f = *config_.fabric;
  out->set_hosts(f.hosts);
  out->set_planes(f.planes);
  out->set_ecmp_links(f.ecmp_links);
  out->set_time_ns(snap.now);
  uint64_t dropped = 0;
  auto add_cause = [&](const std::string& cause, uint64_t n) {
    if (n == 0) return;
    (*out->mutable_drops_by_cause())[cause] += n;
    dropped += n;
  };
  for (size_t c = 1; c < std::size(snap.worker.emu_drops); ++c)
    add_cause(emulator::drop_cause_name(static_cast<emulator::DropCause>(c)), snap.worker.emu_drops[c]);
  add_cause("frames_too_large", snap.worker.frames_too_large);
  add_cause("delay_line_full", snap.worker.delay_line_full);
  add_cause("tx_ring_full", snap.worker.tx_dropped_ring_full);
  out->set_frames_forwarded(snap.worker.tx_frames);
  out->set_frames_dropped(dropped);
  out->set_timeline_pending(snap.timeline_pending);
  for (const auto& l : snap.links) {
    auto* ls = out->add_links();
    ls->set_plane(l.plane), ls->set_ecmp(l.ecmp);
    ls->set_host_a(std::min(l.a, l.b)), ls->set_host_b(std::max(l.a, l.b));
    ls->set_direction(l.a < l.b ? "a_to_b" : "b_to_a");
    ls->set_up(l.up);
    const auto& c = l.config;
    ls->set_rate_bps(c.rate_bps);
    ls->set_prop_delay_ns(c.prop_delay_ns);
    const emulator::LossConfig loss = emulator::effective_loss(c);
    const bool prob_kind = loss.kind == emulator::LossConfig::Kind::kBernoulli ||
                           loss.kind == emulator::LossConfig::Kind::kCorrelated;
    ls->set_loss_probability(prob_kind ? loss.probability : 0);
    ls->set_loss_kind(loss_kind_name(loss.kind));
    ls->set_delay_ns(c.delay.delay_ns);
    ls->set_jitter_ns(c.delay.jitter_ns);
    ls->set_reorder_probability(c.reorder_probability > 0 ? c.reorder_probability : c.reorder.probability);
    ls->set_duplicate_probability(c.duplicate_probability);
    ls->set_corrupt_probability(c.corrupt_probability);
    ls->set_ecn_threshold_bytes(c.ecn_threshold_bytes);
    ls->set_flap_period_ns(c.flap.period_ns);
    const auto& k = l.counters;
    ls->set_packets_in(k.packets_in), ls->set_packets_out(k.packets_out);
    ls->set_drops_random_loss(k.drops_random_loss), ls->set_drops_queue_overflow(k.drops_queue_overflow);
    ls->set_drops_link_down(k.drops_link_down), ls->set_ecn_marks(k.ecn_marks);
    ls->set_duplicates(k.duplicates), ls->set_reorders(k.reorders), ls->set_corruptions(k.corruptions);
    ls->set_delay_p50_ns(l.p50_ns), ls->set_delay_p99_ns(l.p99_ns);
    ls->set_bytes_out(k.bytes_out), ls->set_queue_bytes(l.backlog_bytes);
  }
  return grpc::Status::OK;
}

grpc::Status DaemonCore::fabric_set(const v1::LinkSelector& sel, const v1::LinkPatch& patch, v1::SetLinksResponse* out) {
  if (auto s = need_fabric(); !s.ok()) return s;
  emulator::LinkSelector es;
  if (auto s = to_emulator_selector(sel, *config_.fabric, &es); !s.ok()) return s;
  emulator::LinkPatch ep;
  if (auto s = to_emulator_patch(patch, &ep); !s.ok()) return s;
  if (ep == emulator::LinkPatch{}) return invalid("patch", "names no field to change (set at least one, e.g. loss_probability)");
  transport::Nanos at = 0;
  uint32_t n = 0;
  if (auto e = fabric_->apply(es, ep, &at, &n); !e.empty()) return invalid("patch", e);
  out->set_links_changed(n);
  out->set_applied_at_ns(at);
  spdlog::info("fabric: set on {} links at {} ns", n, at);
  return grpc::Status::OK;
}

grpc::Status DaemonCore::fabric_up_down(const v1::LinkSelector& sel, bool up, v1::SetLinksResponse* out) {
  if (auto s = need_fabric(); !s.ok()) return s;
  emulator::LinkSelector es;
  if (auto s = to_emulator_selector(sel, *config_.fabric, &es); !s.ok()) return s;
  emulator::LinkPatch ep;
  ep.up = up;
  transport::Nanos at = 0;
  uint32_t n = 0;
  if (auto e = fabric_->apply(es, ep, &at, &n); !e.empty()) return invalid("selector", e);
  out->set_links_changed(n);
  out->set_applied_at_ns(at);
  spdlog::info("fabric: {} links {} at {} ns", n, up ? "up" : "down", at);
  return grpc::Status::OK;
}

grpc::Status DaemonCore::fabric_reset(v1::SetLinksResponse* out) {
  if (auto s = need_fabric(); !s.ok()) return s;
  transport::Nanos at = 0;
  uint32_t n = 0;
  if (auto e = fabric_->reset(&at, &n); !e.empty()) return {grpc::StatusCode::INTERNAL, "reset: " + e};
  out->set_links_changed(n);
  out->set_applied_at_ns(at);
  spdlog::info("fabric: reset {} links at {} ns", n, at);
  return grpc::Status::OK;
}

grpc::Status DaemonCore::fabric_timeline(const v1::LoadTimelineRequest& req, v1::LoadTimelineResponse* out) {
  if (auto s = need_fabric(); !s.ok()) return s;
  std::vector<emulator::TimelineEvent> events;
  if (auto s = to_emulator_timeline(req, *config_.fabric, &events); !s.ok()) return s;
  transport::Nanos base = 0, base_monotonic = 0;
  if (auto e = fabric_->load_timeline(std::move(events), &base, &base_monotonic); !e.empty()) return invalid("events", e);
  out->set_base_ns(base);
  timespec mono, real;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  const int64_t realtime_offset = (static_cast<int64_t>(real.tv_sec) - mono.tv_sec) * 1'000'000'000 + (real.tv_nsec - mono.tv_nsec);
  out->set_base_unix_ns(static_cast<uint64_t>(base_monotonic + realtime_offset));
  out->set_events(static_cast<uint32_t>(req.events_size()));
  spdlog::info("fabric: timeline of {} events from {} ns", req.events_size(), base);
  return grpc::Status::OK;
}

}  // namespace metaroce::daemon
