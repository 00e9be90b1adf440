#include "metaroce/emulator/delay_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "range_check.h"

namespace metaroce::emulator {

using detail::in_unit;
using detail::in_unit_open;
using detail::kNaN;

namespace {

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt2Pi = 2.50662827463100050242;

// Standard normal CDF, accurate in both tails.
double phi(double x) { return 0.5 * std::erfc(-x / kSqrt2); }

// Phi^-1(p) for p in (0, 0.5]: Acklam's rational approximation (relative
// error ~1e-9), then one Halley step on Phi, which brings it to double
// precision. Only the lower half is needed: the upper half is its mirror,
// taken from the exact complement so the right tail keeps its precision.
double normal_lower_quantile(double p) {
  constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                          1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                          6.680131188771972e+01,  -1.328068155288572e+01};
  constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                          -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                          3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  }
  const double e = phi(x) - p;
  const double u = e * kSqrt2Pi * std::exp(0.5 * x * x);
  return x - u / (1.0 + 0.5 * x * u);
}

// Phi^-1(u) given u and its exact complement ubar = 1 - u.
double normal_quantile(double u, double ubar) {
  return u <= 0.5 ? normal_lower_quantile(u) : -normal_lower_quantile(ubar);
}

// Standardised shape: (x - D) / J as a function of the packet's quantile.
double shape(DelayConfig::Distribution dist, double u, double ubar, double z) {
  using D = DelayConfig::Distribution;
  switch (dist) {
    case D::kUniform:
      return u - ubar;  // 2u - 1, symmetric in u and ubar
    case D::kNormal:
      return z;
    case D::kPareto:
      return (4.0 / 3.0) * (1.0 / std::cbrt(ubar) - 1.5);
    case D::kParetoNormal:
      return 0.25 * z + (1.0 / std::cbrt(ubar) - 1.5);
  }
  return 0.0;
}

bool needs_z(DelayConfig::Distribution d) {
  return d == DelayConfig::Distribution::kNormal || d == DelayConfig::Distribution::kParetoNormal;
}

Nanos clamp_round(double x) {
  if (!(x > 0)) return 0;  // also catches NaN
  if (x >= static_cast<double>(kMaxSampleNs)) return kMaxSampleNs;
  return static_cast<Nanos>(std::llround(x));
}

}  // namespace

std::optional<std::string> validate(const DelayConfig& c) {
  const std::string range = "[0, " + std::to_string(kMaxDelayNs) + "] ns (one hour)";
  if (c.delay_ns < 0 || c.delay_ns > kMaxDelayNs)
    return "delay.delay_ns: must be in " + range + " (got " + std::to_string(c.delay_ns) + ")";
  if (c.jitter_ns < 0 || c.jitter_ns > kMaxDelayNs)
    return "delay.jitter_ns: must be in " + range + " (got " + std::to_string(c.jitter_ns) + ")";
  if (c.distribution > DelayConfig::Distribution::kParetoNormal)
    return "delay.distribution: must be one of uniform, normal, pareto, paretonormal (got " +
           std::to_string(static_cast<unsigned>(c.distribution)) + ")";
  return in_unit_open("delay.correlation", c.correlation);
}

DelayModel::DelayModel(const DelayConfig& config) : config_(config) {}

void DelayModel::reset() {
  latent_ = 0;
  have_latent_ = false;
  last_arrival_ = INT64_MIN;
}

Nanos DelayModel::sample(Random& rng) {
  const DelayConfig& c = config_;
  if (c.jitter_ns == 0) return clamp_round(static_cast<double>(c.delay_ns));
  // Open (0, 1) uniform and its exact complement from one 53-bit draw, so
  // neither tail can hit 0 or 1 and the far right tail keeps its precision.
  const double k = static_cast<double>(rng.next() >> 11);
  double u = (k + 0.5) * 0x1.0p-53;
  double ubar = ((0x1.0p53 - 1.0 - k) + 0.5) * 0x1.0p-53;
  double z = 0;
  if (c.correlation > 0) {
    const double e = normal_quantile(u, ubar);
    latent_ = have_latent_ ? c.correlation * latent_ + std::sqrt(1.0 - c.correlation * c.correlation) * e : e;
    have_latent_ = true;
    z = latent_;
    u = phi(latent_);
    ubar = phi(-latent_);
  } else if (needs_z(c.distribution)) {
    z = normal_quantile(u, ubar);
  }
  const double x =
      static_cast<double>(c.delay_ns) + static_cast<double>(c.jitter_ns) * shape(c.distribution, u, ubar, z);
  return clamp_round(x);
}

Nanos DelayModel::arrival(Nanos depart, Random& rng) {
  const Nanos d = sample(rng);
  Nanos a = depart > std::numeric_limits<Nanos>::max() - d ? std::numeric_limits<Nanos>::max() : depart + d;
  if (!config_.allow_reorder) {
    a = std::max(a, last_arrival_);
    last_arrival_ = a;
  }
  return a;
}

double DelayModel::quantile_ns(const DelayConfig& c, double q) {
  if (validate(c)) return kNaN;
  if (!(q > 0)) q = 0;
  if (q > 1) q = 1;
  double x = static_cast<double>(c.delay_ns);
  if (c.jitter_ns > 0) {
    const double u = q, ubar = 1.0 - q;
    double z = 0;
    if (needs_z(c.distribution)) {
      z = u == 0 ? -HUGE_VAL : ubar == 0 ? HUGE_VAL : normal_quantile(u, ubar);
    }
    x += static_cast<double>(c.jitter_ns) * shape(c.distribution, u, ubar, z);
  }
  if (!(x > 0)) return 0.0;
  return std::min(x, static_cast<double>(kMaxSampleNs));
}

std::optional<std::string> validate(const ReorderConfig& c) {
  if (auto e = in_unit("reorder.probability", c.probability)) return e;
  return in_unit_open("reorder.correlation", c.correlation);  // every gap value is meaningful
}

Reorderer::Reorderer(const ReorderConfig& config) : config_(config) {}

void Reorderer::reset() {
  delayed_since_ = 0;
  have_last_ = false;
  last_ = false;
}

bool Reorderer::send_now(Random& rng) {
  const ReorderConfig& c = config_;
  const uint64_t gap = std::max<uint64_t>(c.gap, 1);
  if (!(c.probability > 0) || delayed_since_ + 1 < gap) {
    ++delayed_since_;
    return false;
  }
  bool now;
  if (have_last_ && c.correlation > 0 && rng.uniform() < c.correlation) {
    now = last_;
  } else {
    now = rng.bernoulli(c.probability);
  }
  have_last_ = true;
  last_ = now;
  delayed_since_ = now ? 0 : delayed_since_ + 1;
  return now;
}

double Reorderer::expected_fraction(const ReorderConfig& c) {
  if (validate(c)) return kNaN;
  if (c.probability == 0) return 0.0;
  const double gap = std::max<double>(c.gap, 1);
  // After a reorder: gap - 1 delayed packets, then the first eligible one is
  // reordered w.p. a (it may repeat the reorder), later ones w.p. b each.
  const double a = c.correlation + (1.0 - c.correlation) * c.probability;
  const double b = (1.0 - c.correlation) * c.probability;
  return 1.0 / (gap + (1.0 - a) / b);
}

}  // namespace metaroce::emulator
