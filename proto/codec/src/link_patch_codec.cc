#include "metaroce/api/link_patch_codec.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

namespace metaroce::api {
namespace {

using LossKind = emulator::LossConfig::Kind;
using Distribution = emulator::DelayConfig::Distribution;

// The API's names for the emulator's enums (kPattern has none).
constexpr std::array<std::pair<std::string_view, LossKind>, 5> kLossKinds = {{{"none", LossKind::kNone},
                                                                             {"bernoulli", LossKind::kBernoulli},
                                                                             {"correlated", LossKind::kCorrelated},
                                                                             {"gilbert_elliott", LossKind::kGilbertElliott},
                                                                             {"four_state", LossKind::kFourState}}};
constexpr std::array<std::pair<std::string_view, Distribution>, 4> kDistributions = {{{"uniform", Distribution::kUniform},
                                                                                      {"normal", Distribution::kNormal},
                                                                                      {"pareto", Distribution::kPareto},
                                                                                      {"paretonormal", Distribution::kParetoNormal}}};

// A client's string in an error: quoted, short, printable.
std::string quoted(std::string_view v) {
  constexpr size_t kMaxChars = 64;
  std::string out = "'";
  for (size_t i = 0; i < std::min(v.size(), kMaxChars); ++i) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    out += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
  }
  out += "'";
  if (v.size() > kMaxChars) out += "... (" + std::to_string(v.size()) + " bytes)";
  return out;
}

// The API names a model's parameters p, r, h, k, p14 (netem's names); the
// emulator's fields differ by model. Emulator name -> API name, for messages.
using Renames = std::vector<std::pair<std::string, std::string>>;

std::optional<std::string> decode_loss(const v1::LossModel& m, emulator::LossConfig* l, Renames* renames) {
  const auto kind = std::find_if(kLossKinds.begin(), kLossKinds.end(), [&](const auto& k) { return k.first == m.kind(); });
  if (kind == kLossKinds.end())
    return "loss.kind: must be none, bernoulli, correlated, gilbert_elliott or four_state (got " + quoted(m.kind()) + ")";
  l->kind = kind->second;
  l->probability = m.probability();
  l->correlation = m.correlation();
  if (l->kind == LossKind::kGilbertElliott) {
    l->ge_p = m.p(), l->ge_r = m.r(), l->ge_1_h = m.h(), l->ge_1_k = m.k();
    if (m.h() == 0 && m.k() == 0) l->ge_1_h = 1;  // simple Gilbert: every packet in Bad is lost
    *renames = {{"loss.ge_p", "loss.p"}, {"loss.ge_r", "loss.r"}, {"loss.ge_1_h", "loss.h"}, {"loss.ge_1_k", "loss.k"}};
  } else if (l->kind == LossKind::kFourState) {
    l->p13 = m.p(), l->p31 = m.r(), l->p32 = m.h(), l->p23 = m.k(), l->p14 = m.p14();
    *renames = {{"loss.p13", "loss.p"}, {"loss.p31", "loss.r"}, {"loss.p32", "loss.h"}, {"loss.p23", "loss.k"}};
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> decode_link_patch(const v1::LinkPatch& in, emulator::LinkPatch* out) {
  if (in.has_rate_bps()) out->rate_bps = in.rate_bps();
  if (in.has_prop_delay_ns()) out->prop_delay_ns = in.prop_delay_ns();
  if (in.has_queue_limit_bytes()) out->queue_limit_bytes = in.queue_limit_bytes();
  if (in.has_queue_limit_packets()) out->queue_limit_packets = in.queue_limit_packets();
  if (in.has_ecn_threshold_bytes()) out->ecn_threshold_bytes = in.ecn_threshold_bytes();
  if (in.has_loss_probability()) out->loss_probability = in.loss_probability();
  Renames renames;
  if (in.has_loss() && !in.loss().kind().empty()) {  // an empty kind: no model sent
    emulator::LossConfig l;
    if (auto e = decode_loss(in.loss(), &l, &renames)) return e;
    out->loss = l;
  }
  if (in.has_delay()) {
    const v1::DelayModel& d = in.delay();
    emulator::DelayConfig c;
    c.delay_ns = d.delay_ns();
    c.jitter_ns = d.jitter_ns();
    const std::string_view name = d.distribution().empty() ? std::string_view("uniform") : std::string_view(d.distribution());
    const auto dist = std::find_if(kDistributions.begin(), kDistributions.end(), [&](const auto& k) { return k.first == name; });
    if (dist == kDistributions.end())
      return "delay.distribution: must be uniform, normal, pareto or paretonormal (got " + quoted(d.distribution()) + ")";
    c.distribution = dist->second;
    c.correlation = d.correlation();
    c.allow_reorder = d.allow_reorder();
    out->delay = c;
  }
  if (in.has_reorder()) {
    emulator::ReorderConfig c;
    c.probability = in.reorder().probability();
    c.correlation = in.reorder().correlation();
    c.gap = in.reorder().gap();
    out->reorder = c;
  }
  if (in.has_reorder_probability()) out->reorder_probability = in.reorder_probability();
  if (in.has_reorder_delay_ns()) out->reorder_delay_ns = in.reorder_delay_ns();
  if (in.has_duplicate_probability()) out->duplicate_probability = in.duplicate_probability();
  if (in.has_corrupt_probability()) out->corrupt_probability = in.corrupt_probability();
  if (in.has_up()) out->up = in.up();
  if (in.has_flap()) {
    emulator::FlapConfig c;
    c.period_ns = in.flap().period_ns();
    c.down_ns = in.flap().down_ns();
    out->flap = c;
  }
  auto e = emulator::validate(*out);
  if (!e) return std::nullopt;
  // "loss.ge_p: must be ..." -> "loss.p: must be ...", the name the caller used.
  for (const auto& [ours, theirs] : renames)
    for (size_t at = e->find(ours); at != std::string::npos; at = e->find(ours, at + theirs.size()))
      e->replace(at, ours.size(), theirs);
  return e;
}

v1::LinkPatch encode_link_patch(const emulator::LinkPatch& in) {
  v1::LinkPatch out;
  if (in.rate_bps) out.set_rate_bps(*in.rate_bps);
  if (in.prop_delay_ns) out.set_prop_delay_ns(*in.prop_delay_ns);
  if (in.queue_limit_bytes) out.set_queue_limit_bytes(*in.queue_limit_bytes);
  if (in.queue_limit_packets) out.set_queue_limit_packets(*in.queue_limit_packets);
  if (in.ecn_threshold_bytes) out.set_ecn_threshold_bytes(*in.ecn_threshold_bytes);
  if (in.loss_probability) out.set_loss_probability(*in.loss_probability);
  if (in.loss && in.loss->kind != LossKind::kPattern) {
    const emulator::LossConfig& l = *in.loss;
    v1::LossModel& m = *out.mutable_loss();
    for (const auto& [name, kind] : kLossKinds)
      if (kind == l.kind) m.set_kind(std::string(name));
    m.set_probability(l.probability);
    m.set_correlation(l.correlation);
    if (l.kind == LossKind::kGilbertElliott) m.set_p(l.ge_p), m.set_r(l.ge_r), m.set_h(l.ge_1_h), m.set_k(l.ge_1_k);
    if (l.kind == LossKind::kFourState) m.set_p(l.p13), m.set_r(l.p31), m.set_h(l.p32), m.set_k(l.p23), m.set_p14(l.p14);
  }
  if (in.delay) {
    v1::DelayModel& d = *out.mutable_delay();
    d.set_delay_ns(in.delay->delay_ns);
    d.set_jitter_ns(in.delay->jitter_ns);
    for (const auto& [name, dist] : kDistributions)
      if (dist == in.delay->distribution) d.set_distribution(std::string(name));
    d.set_correlation(in.delay->correlation);
    d.set_allow_reorder(in.delay->allow_reorder);
  }
  if (in.reorder) {
    v1::ReorderModel& r = *out.mutable_reorder();
    r.set_probability(in.reorder->probability);
    r.set_correlation(in.reorder->correlation);
    r.set_gap(in.reorder->gap);
  }
  if (in.reorder_probability) out.set_reorder_probability(*in.reorder_probability);
  if (in.reorder_delay_ns) out.set_reorder_delay_ns(*in.reorder_delay_ns);
  if (in.duplicate_probability) out.set_duplicate_probability(*in.duplicate_probability);
  if (in.corrupt_probability) out.set_corrupt_probability(*in.corrupt_probability);
  if (in.up) out.set_up(*in.up);
  if (in.flap) {
    out.mutable_flap()->set_period_ns(in.flap->period_ns);
    out.mutable_flap()->set_down_ns(in.flap->down_ns);
  }
  return out;
}

v1::LinkSelector encode_link_selector(const emulator::LinkSelector& in) {
  v1::LinkSelector out;
  if (in.plane) out.set_plane(*in.plane);
  if (in.ecmp) out.set_ecmp(*in.ecmp);
  out.set_direction(emulator::direction_name(in.direction));
  if (in.host_a) out.set_host_a(*in.host_a);
  if (in.host_b) out.set_host_b(*in.host_b);
  return out;
}

}  // namespace metaroce::api
