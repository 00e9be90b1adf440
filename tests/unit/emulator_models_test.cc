// Loss, delay, reorder models and the delay histogram: statistics against the
// analytic values, exact patterns, validation, determinism, no allocation.
//
// Every statistical check uses a fixed seed (so the test is deterministic) and
// a tolerance derived from the estimator's own sampling error, never a guess:
//  - independent trials: 4 sigma of a binomial, sqrt(p (1 - p) / n);
//  - a two-state Markov chain with lag-1 autocorrelation lambda: the sample
//    mean's variance is p (1 - p) / n * (1 + lambda) / (1 - lambda);
//  - geometric run lengths (i.i.d. in these chains): the sample mean of R runs
//    with continuation probability s has sd sqrt(s) / (1 - s) / sqrt(R);
//  - anything else (general Gilbert-Elliott, 4-state, reorder with gap,
//    correlated jitter): batch means over 200 batches much longer than the
//    chain's mixing time, and the ratio-estimator form for burst lengths;
//  - distribution quantiles: the empirical CDF at the analytic q-quantile is a
//    binomial proportion, so |F_n(Q(q)) - q| <= 4 sqrt(q (1 - q) / n).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <new>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "metaroce/emulator/delay_model.h"
#include "metaroce/emulator/histogram.h"
#include "metaroce/emulator/loss_model.h"
#include "metaroce/emulator/random.h"

// Counts every global operator new so the per-packet paths can be shown not
// to allocate. Replacing them is allowed for a program; this binary is ours.
namespace {
std::atomic<uint64_t> g_allocations{0};
}
// GCC pairs the inlined malloc with these frees and warns; they do match.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace metaroce::emulator {
namespace {

using Kind = LossConfig::Kind;
using Dist = DelayConfig::Distribution;

constexpr double kSigmas = 4.0;

double binomial_tol(double p, double n) { return kSigmas * std::sqrt(p * (1 - p) / n) + 1.0 / n; }

// ---------- loss measurement with batch means ----------

struct LossStats {
  double rate = 0, rate_se = 0;    // loss fraction and its standard error
  double burst = 0, burst_se = 0;  // mean run of consecutive losses and its se
  uint64_t runs = 0;
};

// Runs `batches` x `per_batch` packets. Batch means give the rate's standard
// error; the burst is the ratio (losses) / (runs that ended), whose standard
// error is the ratio estimator's: sd of (L_b - burst * E_b) / sqrt(B) / mean E_b.
LossStats measure(LossModel& m, Random& rng, int batches, int per_batch) {
  std::vector<double> losses(batches), ends(batches);
  bool prev = false;
  for (int b = 0; b < batches; ++b) {
    for (int i = 0; i < per_batch; ++i) {
      const bool lost = m.drop(rng);
      losses[b] += lost;
      ends[b] += prev && !lost;
      prev = lost;
    }
  }
  LossStats s;
  double total_l = 0, total_e = 0;
  for (int b = 0; b < batches; ++b) total_l += losses[b], total_e += ends[b];
  const double n = static_cast<double>(batches) * per_batch;
  s.rate = total_l / n;
  s.runs = static_cast<uint64_t>(total_e);
  double var = 0;
  for (int b = 0; b < batches; ++b) var += std::pow(losses[b] / per_batch - s.rate, 2);
  s.rate_se = std::sqrt(var / (batches - 1) / batches);
  if (total_e > 0) {
    s.burst = total_l / total_e;
    double d2 = 0;
    for (int b = 0; b < batches; ++b) d2 += std::pow(losses[b] - s.burst * ends[b], 2);
    s.burst_se = std::sqrt(d2 / (batches - 1) / batches) / (total_e / batches);
  }
  return s;
}

// ---------- Bernoulli ----------

TEST(LossModel, BernoulliRateWithinFourSigma) {
  for (double p : {0.001, 0.01, 0.1, 0.5}) {
    SCOPED_TRACE(p);
    LossConfig c;
    c.kind = Kind::kBernoulli;
    c.probability = p;
    ASSERT_FALSE(validate(c));
    LossModel m(c);
    Random rng(11);
    const int n = 1'000'000;
    int lost = 0;
    for (int i = 0; i < n; ++i) lost += m.drop(rng);
    EXPECT_NEAR(static_cast<double>(lost) / n, p, binomial_tol(p, n));
    EXPECT_DOUBLE_EQ(LossModel::expected_loss_rate(c), p);
    EXPECT_DOUBLE_EQ(LossModel::expected_burst_length(c), 1 / (1 - p));
  }
}

TEST(LossModel, BernoulliEdgesAndNone) {
  Random rng(1);
  LossConfig c;
  c.kind = Kind::kBernoulli;
  c.probability = 1;
  LossModel all(c);
  c.probability = 0;
  LossModel none(c);
  LossModel off;  // kNone
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(all.drop(rng));
    EXPECT_FALSE(none.drop(rng));
    EXPECT_FALSE(off.drop(rng));
  }
  EXPECT_TRUE(std::isnan(LossModel::expected_burst_length(c)));  // p = 0: no bursts
  EXPECT_EQ(LossModel::expected_loss_rate({}), 0.0);
}

// ---------- correlated ----------

TEST(LossModel, CorrelatedKeepsMeanAndBurstsGrowWithCorrelation) {
  const double p = 0.05;
  const int n = 2'000'000;
  double previous_burst = 0;
  for (double corr : {0.0, 0.5, 0.9}) {
    SCOPED_TRACE(corr);
    LossConfig c;
    c.kind = Kind::kCorrelated;
    c.probability = p;
    c.correlation = corr;
    ASSERT_FALSE(validate(c));
    LossModel m(c);
    Random rng(21);
    int lost = 0, runs = 0;
    bool prev = false;
    for (int i = 0; i < n; ++i) {
      const bool l = m.drop(rng);
      lost += l;
      runs += l && !prev;
      prev = l;
    }
    // Decisions form a Markov chain with lag-1 autocorrelation `corr`.
    const double rate_tol = kSigmas * std::sqrt(p * (1 - p) / n * (1 + corr) / (1 - corr));
    EXPECT_NEAR(static_cast<double>(lost) / n, p, rate_tol);
    // Run lengths are i.i.d. geometric with continuation s = corr + (1 - corr) p.
    const double s = corr + (1 - corr) * p;
    const double burst = static_cast<double>(lost) / runs;
    const double expected = LossModel::expected_burst_length(c);
    EXPECT_NEAR(expected, 1 / ((1 - corr) * (1 - p)), 1e-12);
    EXPECT_NEAR(burst, expected, kSigmas * std::sqrt(s) / (1 - s) / std::sqrt(runs));
    EXPECT_GT(burst, previous_burst);
    previous_burst = burst;
  }
}

TEST(LossModel, CorrelatedWithZeroCorrelationReplaysBernoulli) {
  LossConfig b;
  b.kind = Kind::kBernoulli;
  b.probability = 0.2;
  LossConfig c = b;
  c.kind = Kind::kCorrelated;
  LossModel mb(b), mc(c);
  Random rb(5), rc(5);
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(mb.drop(rb), mc.drop(rc));
}

// ---------- Gilbert-Elliott ----------

TEST(LossModel, GilbertElliottSimpleGilbertRateAndBurst) {
  LossConfig c;
  c.kind = Kind::kGilbertElliott;
  c.ge_p = 0.01;
  c.ge_r = 0.3;
  c.ge_1_h = 1;
  c.ge_1_k = 0;
  ASSERT_FALSE(validate(c));
  const double pi_bad = c.ge_p / (c.ge_p + c.ge_r);
  EXPECT_NEAR(LossModel::expected_loss_rate(c), pi_bad, 1e-15);
  EXPECT_NEAR(LossModel::expected_burst_length(c), 1 / c.ge_r, 1e-12);

  LossModel m(c);
  Random rng(31);
  const int n = 2'000'000;
  int lost = 0, runs = 0;
  bool prev = false;
  for (int i = 0; i < n; ++i) {
    const bool l = m.drop(rng);
    lost += l;
    runs += l && !prev;
    prev = l;
  }
  // Loss == "in Bad": a two-state chain with lag-1 autocorrelation 1 - p - r.
  const double lambda = 1 - c.ge_p - c.ge_r;
  const double rate_tol = kSigmas * std::sqrt(pi_bad * (1 - pi_bad) / n * (1 + lambda) / (1 - lambda));
  EXPECT_NEAR(static_cast<double>(lost) / n, pi_bad, rate_tol);
  // Bad sojourns are geometric with continuation 1 - r.
  const double s = 1 - c.ge_r;
  EXPECT_NEAR(static_cast<double>(lost) / runs, 1 / c.ge_r, kSigmas * std::sqrt(s) / (1 - s) / std::sqrt(runs));
}

// Stationary rate and mean burst of a hidden two-state chain by brute-force
// power iteration: an independent check of the closed forms in the model.
void ge_by_iteration(const LossConfig& c, double& rate, double& burst) {
  const double P[2][2] = {{1 - c.ge_p, c.ge_p}, {c.ge_r, 1 - c.ge_r}};
  const double loss[2] = {c.ge_1_k, c.ge_1_h};
  double pi[2] = {1, 0};
  for (int it = 0; it < 100000; ++it) {
    const double a = pi[0] * P[0][0] + pi[1] * P[1][0];
    const double b = pi[0] * P[0][1] + pi[1] * P[1][1];
    pi[0] = a, pi[1] = b;
  }
  rate = pi[0] * loss[0] + pi[1] * loss[1];
  double ends = 0;
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < 2; ++t) ends += pi[s] * loss[s] * P[s][t] * (1 - loss[t]);
  burst = rate / ends;
}

TEST(LossModel, GilbertElliottGeneralMatchesExpected) {
  LossConfig c;
  c.kind = Kind::kGilbertElliott;
  c.ge_p = 0.05;
  c.ge_r = 0.4;
  c.ge_1_h = 0.7;
  c.ge_1_k = 0.01;
  ASSERT_FALSE(validate(c));
  double rate = 0, burst = 0;
  ge_by_iteration(c, rate, burst);
  EXPECT_NEAR(LossModel::expected_loss_rate(c), rate, 1e-12);
  EXPECT_NEAR(LossModel::expected_burst_length(c), burst, 1e-9);

  LossModel m(c);
  Random rng(32);
  const LossStats s = measure(m, rng, 200, 10000);  // mixing time 1/(p+r) ~ 2 packets
  EXPECT_NEAR(s.rate, rate, kSigmas * s.rate_se);
  EXPECT_NEAR(s.burst, burst, kSigmas * s.burst_se);
}

// ---------- 4-state ----------

void four_state_by_iteration(const LossConfig& c, double& rate, double& burst) {
  // States 0..3 stand for netem's 1..4; 2 and 3 are the lost states.
  double P[4][4] = {};
  P[0][0] = 1 - c.p13 - c.p14, P[0][2] = c.p13, P[0][3] = c.p14;
  P[1][1] = 1 - c.p23, P[1][2] = c.p23;
  P[2][0] = c.p31, P[2][1] = c.p32, P[2][2] = 1 - c.p31 - c.p32;
  P[3][0] = 1;
  double pi[4] = {1, 0, 0, 0};
  for (int it = 0; it < 100000; ++it) {
    double next[4] = {};
    for (int s = 0; s < 4; ++s)
      for (int t = 0; t < 4; ++t) next[t] += pi[s] * P[s][t];
    std::copy(next, next + 4, pi);
  }
  rate = pi[2] + pi[3];
  const double ends = pi[2] * (P[2][0] + P[2][1]) + pi[3] * (P[3][0] + P[3][1]);
  burst = rate / ends;
}

TEST(LossModel, FourStateMatchesExpected) {
  LossConfig c;
  c.kind = Kind::kFourState;
  c.p13 = 0.02;
  c.p31 = 0.4;
  c.p32 = 0.3;
  c.p23 = 0.2;
  c.p14 = 0.01;
  ASSERT_FALSE(validate(c));
  double rate = 0, burst = 0;
  four_state_by_iteration(c, rate, burst);
  EXPECT_NEAR(LossModel::expected_loss_rate(c), rate, 1e-12);
  EXPECT_NEAR(LossModel::expected_burst_length(c), burst, 1e-9);

  LossModel m(c);
  Random rng(41);
  // Slowest mode: bursts of 1 / (p31 + p32) with intervals of ~1 / p13 packets;
  // 10000-packet batches are long compared with both.
  const LossStats s = measure(m, rng, 200, 10000);
  EXPECT_NEAR(s.rate, rate, kSigmas * s.rate_se);
  EXPECT_NEAR(s.burst, burst, kSigmas * s.burst_se);
}

TEST(LossModel, FourStateWithTcDefaultsIsBernoulli) {
  // tc's "loss state P" means p31 = 1 - P, p23 = 1: a Bernoulli(P) process.
  LossConfig c;
  c.kind = Kind::kFourState;
  c.p13 = 0.1;
  c.p31 = 0.9;
  c.p23 = 1;
  EXPECT_NEAR(LossModel::expected_loss_rate(c), 0.1, 1e-15);
  EXPECT_NEAR(LossModel::expected_burst_length(c), 1 / 0.9, 1e-12);
}

// ---------- pattern ----------

TEST(LossModel, PatternDropsExactlyTheConfiguredPackets) {
  LossConfig c;
  c.kind = Kind::kPattern;
  c.every_nth = 5;
  c.drop_indices = {7, 1, 1, 23, 0, 9};  // unsorted, a duplicate, 9 also matches every 5th
  ASSERT_FALSE(validate(c));
  LossModel m(c);
  Random rng(1);
  std::vector<uint64_t> got;
  for (uint64_t i = 0; i < 30; ++i)
    if (m.drop(rng)) got.push_back(i);
  EXPECT_EQ(got, (std::vector<uint64_t>{0, 1, 4, 7, 9, 14, 19, 23, 24, 29}));
  EXPECT_EQ(m.packets(), 30u);
  EXPECT_EQ(m.config().drop_indices.size(), 6u);  // the config is kept as given

  m.reset();
  std::vector<uint64_t> again;
  for (uint64_t i = 0; i < 30; ++i)
    if (m.drop(rng)) again.push_back(i);
  EXPECT_EQ(again, got);
  EXPECT_DOUBLE_EQ(LossModel::expected_loss_rate(c), 0.2);
  EXPECT_DOUBLE_EQ(LossModel::expected_burst_length(c), 1.0);

  LossConfig only;
  only.kind = Kind::kPattern;
  only.drop_indices = {3};
  EXPECT_EQ(LossModel::expected_loss_rate(only), 0.0);
  EXPECT_TRUE(std::isnan(LossModel::expected_burst_length(only)));
}

// ---------- delay distributions ----------

// Counts samples <= x without sorting (the empirical CDF at x).
double ecdf(const std::vector<Nanos>& xs, double x) {
  size_t k = 0;
  for (Nanos v : xs) k += static_cast<double>(v) <= x;
  return static_cast<double>(k) / static_cast<double>(xs.size());
}

std::vector<Nanos> draw(const DelayConfig& c, uint64_t seed, int n) {
  DelayModel m(c);
  Random rng(seed);
  std::vector<Nanos> xs(n);
  for (auto& x : xs) x = m.sample(rng);
  return xs;
}

double mean_of(const std::vector<Nanos>& xs) {
  double s = 0;
  for (Nanos v : xs) s += static_cast<double>(v);
  return s / static_cast<double>(xs.size());
}

// D = 1 ms and J = 0.2 ms keep normal draws 5 sigma clear of the clamp at 0,
// and nanosecond rounding far below the tolerances.
DelayConfig delay_config(Dist d) {
  DelayConfig c;
  c.delay_ns = 1'000'000;
  c.jitter_ns = 200'000;
  c.distribution = d;
  return c;
}

void expect_quantiles_match(const DelayConfig& c, const std::vector<Nanos>& xs) {
  const double n = static_cast<double>(xs.size());
  for (double q : {0.001, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999}) {
    SCOPED_TRACE(q);
    EXPECT_NEAR(ecdf(xs, DelayModel::quantile_ns(c, q)), q, binomial_tol(q, n));
  }
}

constexpr int kDelaySamples = 300'000;

TEST(DelayModel, UniformStaysWithinExactBoundsAndMatchesQuantiles) {
  const DelayConfig c = delay_config(Dist::kUniform);
  ASSERT_FALSE(validate(c));
  const auto xs = draw(c, 51, kDelaySamples);
  const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
  EXPECT_GE(*lo, c.delay_ns - c.jitter_ns);
  EXPECT_LE(*hi, c.delay_ns + c.jitter_ns);
  // P(no sample in the outer 0.1% of either end) = 0.999^300000 ~ e^-300.
  EXPECT_LT(*lo, c.delay_ns - c.jitter_ns + c.jitter_ns / 500);
  EXPECT_GT(*hi, c.delay_ns + c.jitter_ns - c.jitter_ns / 500);
  EXPECT_DOUBLE_EQ(DelayModel::quantile_ns(c, 0.25), c.delay_ns - c.jitter_ns / 2.0);
  expect_quantiles_match(c, xs);
}

TEST(DelayModel, NormalMedianAndTailQuantiles) {
  const DelayConfig c = delay_config(Dist::kNormal);
  const double D = static_cast<double>(c.delay_ns), J = static_cast<double>(c.jitter_ns);
  // Analytic quantiles: z_0.99 = 2.326347874, z_0.999 = 3.090232306.
  EXPECT_NEAR(DelayModel::quantile_ns(c, 0.5), D, 1e-6);
  EXPECT_NEAR(DelayModel::quantile_ns(c, 0.99), D + 2.326347874 * J, 1e-3);
  EXPECT_NEAR(DelayModel::quantile_ns(c, 0.999), D + 3.090232306 * J, 1e-3);
  auto xs = draw(c, 52, kDelaySamples);
  expect_quantiles_match(c, xs);
  // The same in value space: the sample q-quantile has sd sqrt(q(1-q)/n) / f(x_q),
  // with density f(x_q) = phi(z_q) / J.
  std::sort(xs.begin(), xs.end());
  const double n = kDelaySamples;
  for (auto [q, z] : {std::pair{0.5, 0.0}, std::pair{0.99, 2.326347874}}) {
    const double density = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi) / J;
    const double tol = kSigmas * std::sqrt(q * (1 - q) / n) / density;
    EXPECT_NEAR(static_cast<double>(xs[static_cast<size_t>(q * n)]), D + z * J, tol) << q;
  }
  EXPECT_NEAR(mean_of(xs), D, kSigmas * J / std::sqrt(n));
}

TEST(DelayModel, ParetoHeavyTailWithMeanDelay) {
  const DelayConfig c = delay_config(Dist::kPareto);
  const double D = static_cast<double>(c.delay_ns), J = static_cast<double>(c.jitter_ns);
  // Shape 3, scale x_m = 1: F(y) = 1 - y^-3, so y_q = (1 - q)^(-1/3) and the
  // delay is D + J * 4/3 * (y_q - 3/2).
  for (double q : {0.1, 0.5, 0.99, 0.9999}) {
    const double y = std::pow(1 - q, -1.0 / 3);
    EXPECT_NEAR(DelayModel::quantile_ns(c, q), D + J * 4 / 3 * (y - 1.5), 1e-6 * D) << q;
  }
  const auto xs = draw(c, 53, kDelaySamples);
  EXPECT_GE(*std::min_element(xs.begin(), xs.end()), D - 2 * J / 3 - 1);
  expect_quantiles_match(c, xs);
  // Variance (4/3)^2 * 3/4 * J^2 = 4/3 J^2 is finite for shape 3, so the mean
  // obeys the CLT; 5 sigma for the skew that slows its convergence.
  EXPECT_NEAR(mean_of(xs), D, 5 * J * std::sqrt(4.0 / 3 / kDelaySamples));
}

TEST(DelayModel, ParetoNormalIsNetemsComonotoneMix) {
  const DelayConfig c = delay_config(Dist::kParetoNormal);
  const double D = static_cast<double>(c.delay_ns), J = static_cast<double>(c.jitter_ns);
  // 1/4 of the normal quantile plus 3/4 of the pareto offset at the same q.
  const double q = 0.99;
  EXPECT_NEAR(DelayModel::quantile_ns(c, q), D + J * (0.25 * 2.326347874 + std::pow(1 - q, -1.0 / 3) - 1.5), 1e-3);
  const auto xs = draw(c, 54, kDelaySamples);
  expect_quantiles_match(c, xs);
  EXPECT_NEAR(mean_of(xs), D, 5 * J * std::sqrt(4.0 / 3 / kDelaySamples));
}

TEST(DelayModel, NormalQuantileIsAccurateIntoTheTails) {
  // Phi(z) must give back q to near double precision, far into both tails.
  DelayConfig c;
  c.delay_ns = 100'000'000'000;  // large offset keeps the clamp away
  c.jitter_ns = 1'000'000'000;
  c.distribution = Dist::kNormal;
  for (double q = 1e-12; q < 0.5; q *= 7) {
    const double z = (DelayModel::quantile_ns(c, q) - c.delay_ns) / static_cast<double>(c.jitter_ns);
    EXPECT_NEAR(0.5 * std::erfc(-z / std::sqrt(2.0)), q, 1e-9 * q) << q;
    const double zu = (DelayModel::quantile_ns(c, 1 - q) - c.delay_ns) / static_cast<double>(c.jitter_ns);
    EXPECT_NEAR(zu, -z, 1e-4 * std::max(1.0, std::abs(z))) << q;  // 1 - q itself is rounded
  }
}

TEST(DelayModel, ClampsNegativeDrawsToZero) {
  DelayConfig c;
  c.delay_ns = 1000;
  c.jitter_ns = 2000;
  c.distribution = Dist::kNormal;
  const auto xs = draw(c, 55, 200'000);
  size_t zeros = 0;
  for (Nanos v : xs) {
    ASSERT_GE(v, 0);
    zeros += v == 0;
  }
  // P(D + J z < 0.5) = Phi((0.5 - D) / J) (0.5: rounding to the nearest ns).
  const double p0 = 0.5 * std::erfc(-((0.5 - 1000.0) / 2000.0) / std::sqrt(2.0));
  EXPECT_NEAR(static_cast<double>(zeros) / xs.size(), p0, binomial_tol(p0, xs.size()));
  EXPECT_EQ(DelayModel::quantile_ns(c, 0.1), 0.0);
}

TEST(DelayModel, ConstantDelayWithoutJitterDrawsNothing) {
  DelayConfig c;
  c.delay_ns = 12345;
  DelayModel m(c);
  Random rng(1), untouched(1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(m.sample(rng), 12345);
  EXPECT_EQ(rng.next(), untouched.next());
}

TEST(DelayModel, CorrelationKeepsTheMarginalAndCorrelatesNeighbours) {
  DelayConfig c = delay_config(Dist::kNormal);
  c.correlation = 0.6;
  const int batches = 200, per = 2000;  // AR(1) mixing time ~ 1 / (1 - 0.6) packets
  const auto xs = draw(c, 56, batches * per);
  const double D = c.delay_ns, J = c.jitter_ns;
  // Batch means of x and of the indicator 1{x <= Q(0.9)}.
  const double q90 = DelayModel::quantile_ns(c, 0.9);
  std::vector<double> bm(batches), bi(batches);
  for (int b = 0; b < batches; ++b) {
    for (int i = 0; i < per; ++i) {
      const double v = xs[b * per + i];
      bm[b] += v / per;
      bi[b] += (v <= q90) / static_cast<double>(per);
    }
  }
  auto mean_se = [&](const std::vector<double>& v, double& mean, double& se) {
    mean = 0;
    for (double x : v) mean += x / batches;
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    se = std::sqrt(var / (batches - 1) / batches);
  };
  double m, se;
  mean_se(bm, m, se);
  EXPECT_NEAR(m, D, kSigmas * se);
  mean_se(bi, m, se);
  EXPECT_NEAR(m, 0.9, kSigmas * se);
  // Lag-1 autocorrelation of an AR(1) with coefficient rho: sd ~ (1 - rho^2) / sqrt(n).
  double num = 0, den = 0;
  for (size_t i = 0; i + 1 < xs.size(); ++i) num += (xs[i] - D) * (xs[i + 1] - D);
  for (size_t i = 0; i < xs.size(); ++i) den += (xs[i] - D) * (xs[i] - D);
  const double r1 = num / den;
  EXPECT_NEAR(r1, 0.6, kSigmas * (1 - 0.36) / std::sqrt(xs.size()));
  // And the spread is the configured one (netem's blending would shrink it).
  EXPECT_NEAR(std::sqrt(den / xs.size()), J, 0.02 * J);
}

// ---------- FIFO ----------

TEST(DelayModel, FifoByDefaultReordersOnlyWhenAllowed) {
  DelayConfig c;
  c.delay_ns = 10'000;
  c.jitter_ns = 8'000;  // far more than the 1 us packet spacing
  int decreases[2] = {0, 0};
  for (bool allow : {false, true}) {
    c.allow_reorder = allow;
    DelayModel m(c);
    Random rng(61);
    Nanos last = INT64_MIN;
    for (int i = 0; i < 100'000; ++i) {
      const Nanos a = m.arrival(static_cast<Nanos>(i) * 1000, rng);
      EXPECT_GE(a, static_cast<Nanos>(i) * 1000);
      decreases[allow] += a < last;
      last = a;
    }
  }
  EXPECT_EQ(decreases[0], 0);
  EXPECT_GT(decreases[1], 10'000);
}

TEST(DelayModel, ArrivalSaturatesInsteadOfOverflowing) {
  DelayConfig c;
  c.delay_ns = kMaxDelayNs;
  DelayModel m(c);
  Random rng(1);
  EXPECT_EQ(m.arrival(INT64_MAX - 10, rng), INT64_MAX);
}

// ---------- reorder ----------

TEST(Reorderer, FractionMatchesProbabilityRespectingGap) {
  struct Case {
    double p, corr;
    uint32_t gap;
  };
  for (const Case k : {Case{0.1, 0, 0}, Case{0.3, 0, 1}, Case{0.25, 0, 5}, Case{0.5, 0.5, 3}, Case{0.05, 0.8, 0}}) {
    SCOPED_TRACE(testing::Message() << "p=" << k.p << " corr=" << k.corr << " gap=" << k.gap);
    ReorderConfig c{k.p, k.corr, k.gap};
    ASSERT_FALSE(validate(c));
    const double expected = Reorderer::expected_fraction(c);
    if (k.corr == 0) {
      EXPECT_NEAR(expected, k.p / (1 + (std::max<uint32_t>(k.gap, 1) - 1) * k.p), 1e-15);
    }
    Reorderer r(c);
    Random rng(71);
    const int batches = 200, per = 5000;
    std::vector<double> frac(batches);
    int64_t since = -1, min_spacing = INT64_MAX, i = 0;
    for (int b = 0; b < batches; ++b) {
      for (int j = 0; j < per; ++j, ++i) {
        if (!r.send_now(rng)) continue;
        frac[b] += 1.0 / per;
        if (since >= 0) min_spacing = std::min(min_spacing, i - since);
        since = i;
      }
    }
    double mean = 0, var = 0;
    for (double f : frac) mean += f / batches;
    for (double f : frac) var += (f - mean) * (f - mean);
    EXPECT_NEAR(mean, expected, kSigmas * std::sqrt(var / (batches - 1) / batches));
    // Never two reorders closer than the gap.
    EXPECT_GE(min_spacing, std::max<int64_t>(k.gap, 1));
  }
}

TEST(Reorderer, CertainReorderWithGapIsEveryGapthPacket) {
  Reorderer r({1.0, 0, 5});
  Random rng(1);
  std::vector<int> got;
  for (int i = 1; i <= 20; ++i)
    if (r.send_now(rng)) got.push_back(i);
  EXPECT_EQ(got, (std::vector<int>{5, 10, 15, 20}));  // tc-netem(8): "every 5th packet"
  Reorderer off;
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(off.send_now(rng));
}

// ---------- histogram ----------

TEST(DelayHistogram, BucketLayoutIsContiguousAndFine) {
  for (size_t i = 0; i < DelayHistogram::kBuckets; ++i) {
    const Nanos lo = DelayHistogram::bucket_lower(i), hi = DelayHistogram::bucket_upper(i);
    ASSERT_EQ(DelayHistogram::bucket_index(lo), i);
    ASSERT_EQ(DelayHistogram::bucket_index(hi), i);
    if (i + 1 < DelayHistogram::kBuckets) {
      ASSERT_EQ(DelayHistogram::bucket_lower(i + 1), hi + 1);
    }
    ASSERT_LE(static_cast<double>(hi - lo + 1), std::max(1.0, lo / 64.0));
  }
  EXPECT_EQ(DelayHistogram::bucket_upper(DelayHistogram::kBuckets - 1), DelayHistogram::kMaxTrackable);
  EXPECT_GT(DelayHistogram::kMaxTrackable, 100'000'000'000);  // ~100 s
}

TEST(DelayHistogram, PercentilesWithinStatedPrecisionOfSortedSamples) {
  // Log-uniform over 1 ns .. 100 s, plus a block of small exact values.
  Random rng(81);
  std::vector<Nanos> xs;
  for (int i = 0; i < 600'000; ++i) xs.push_back(static_cast<Nanos>(std::exp(rng.uniform() * std::log(1e11))));
  for (int i = 0; i < 50'000; ++i) xs.push_back(static_cast<Nanos>(rng.below(300)));
  DelayHistogram h, a, b;
  for (size_t i = 0; i < xs.size(); ++i) {
    h.record(xs[i]);
    (i % 2 ? a : b).record(xs[i]);
  }
  a.merge(b);
  std::vector<Nanos> sorted = xs;
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(xs.size());
  EXPECT_EQ(h.count(), xs.size());
  EXPECT_EQ(h.min(), sorted.front());
  EXPECT_EQ(h.max(), sorted.back());
  long double sum = 0;
  for (Nanos v : xs) sum += v;
  EXPECT_NEAR(h.mean(), static_cast<double>(sum / n), 1e-9 * h.mean());
  for (double q : {0.0, 0.001, 0.01, 0.02, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0}) {
    SCOPED_TRACE(q);
    const auto rank = std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(q * n)), 1, xs.size());
    const Nanos exact = sorted[rank - 1];
    EXPECT_LE(std::abs(h.percentile(q) - exact), exact / 128) << exact;  // exact below 128
    EXPECT_EQ(a.percentile(q), h.percentile(q));  // merge is exact
  }
  EXPECT_EQ(a.count(), h.count());
  EXPECT_EQ(a.min(), h.min());
  EXPECT_EQ(a.max(), h.max());
  EXPECT_NEAR(a.mean(), h.mean(), 1e-9 * h.mean());
  EXPECT_NEAR(a.stddev(), h.stddev(), 1e-9 * h.stddev());
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(0.5), 0);
  EXPECT_EQ(h.mean(), 0.0);
}

// The fidelity guard reads lateness quantiles from a Prometheus export of this
// histogram at four edges per power of two: each such edge must count exactly
// the values below it.
TEST(DelayHistogram, CountBelowIsExactAtExportEdges) {
  DelayHistogram h;
  std::vector<Nanos> values;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) values.push_back(static_cast<Nanos>(rng() % 40'000'000));
  for (Nanos v : {Nanos{0}, Nanos{1023}, Nanos{1024}, Nanos{1279}, Nanos{1280}, Nanos{196607}, Nanos{196608}})
    values.push_back(v);
  for (Nanos v : values) h.record(v);
  for (int e = 10; e <= 26; ++e)
    for (int k = 1; k <= 4; ++k) {
      const Nanos edge = (Nanos{1} << (e - 1)) + k * (Nanos{1} << (e - 1)) / 4;
      const auto want = static_cast<uint64_t>(std::count_if(values.begin(), values.end(), [&](Nanos v) { return v < edge; }));
      ASSERT_EQ(h.count_below(edge), want) << "edge " << edge;
    }
  EXPECT_EQ(h.count_below(0), 0u);
  EXPECT_EQ(h.count_below(DelayHistogram::kMaxTrackable + 1), h.count());
}

TEST(DelayHistogram, ExactForSmallValuesAndSaturatesOutOfRange) {
  DelayHistogram h;
  for (Nanos v = 0; v < 200; ++v) h.record(v);
  EXPECT_EQ(h.percentile(0.5), 99);
  EXPECT_EQ(h.percentile(0), 0);
  EXPECT_EQ(h.percentile(1), 199);
  EXPECT_NEAR(h.stddev(), std::sqrt((200.0 * 200 - 1) / 12), 1e-9);
  EXPECT_EQ(h.saturated(), 0u);
  h.record(-5);
  h.record(DelayHistogram::kMaxTrackable + 1000);
  EXPECT_EQ(h.saturated(), 2u);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), DelayHistogram::kMaxTrackable);
  EXPECT_EQ(h.percentile(std::nan("")), 0);
}

TEST(DelayHistogram, RecordingManyCopiesIsRecordingEachOne) {
  DelayHistogram one_by_one, in_groups;
  const std::pair<Nanos, uint64_t> groups[] = {{700, 3}, {12, 1}, {2'000'000, 40}, {-3, 2}, {90'000, 0}, {5, 17}};
  for (const auto& [ns, times] : groups) {
    in_groups.record(ns, times);
    for (uint64_t i = 0; i < times; ++i) one_by_one.record(ns);
  }
  EXPECT_EQ(in_groups.count(), one_by_one.count());
  EXPECT_EQ(in_groups.saturated(), 2u);
  EXPECT_EQ(in_groups.min(), one_by_one.min());
  EXPECT_EQ(in_groups.max(), one_by_one.max());
  EXPECT_NEAR(in_groups.mean(), one_by_one.mean(), 1e-6);
  EXPECT_NEAR(in_groups.stddev(), one_by_one.stddev(), 1e-6);
  for (double q : {0.1, 0.5, 0.9, 0.99}) EXPECT_EQ(in_groups.percentile(q), one_by_one.percentile(q)) << q;
  for (Nanos edge : {Nanos{13}, Nanos{1024}, Nanos{2'097'152}}) EXPECT_EQ(in_groups.count_below(edge), one_by_one.count_below(edge));
}

// ---------- validation ----------

struct BadValue {
  std::string field;  // the error must start with this
  std::string range;  // and state this range
  std::function<void()> apply;
};

void expect_rejected(const std::optional<std::string>& e, const std::string& field, const std::string& range,
                     bool is_nan) {
  ASSERT_TRUE(e.has_value()) << field;
  EXPECT_EQ(e->rfind(field + ":", 0), 0u) << *e;
  EXPECT_NE(e->find(range), std::string::npos) << *e;
  if (is_nan) {
    EXPECT_NE(e->find("nan"), std::string::npos) << *e;
  }
}

TEST(Validate, LossNamesFieldAndRangeForEveryBadValue) {
  const double nan = std::nan("");
  struct Field {
    const char* name;
    double LossConfig::*member;
    const char* range;
    std::vector<double> bad;
  };
  const std::vector<Field> fields = {
      {"loss.probability", &LossConfig::probability, "[0, 1]", {-0.1, 1.5, nan}},
      {"loss.correlation", &LossConfig::correlation, "[0, 1)", {-0.1, 1.0, nan}},
      {"loss.ge_p", &LossConfig::ge_p, "[0, 1]", {-1, 1.5, nan}},
      {"loss.ge_r", &LossConfig::ge_r, "[0, 1]", {-1, 1.5, nan}},
      {"loss.ge_1_h", &LossConfig::ge_1_h, "[0, 1]", {-1, 2, nan}},
      {"loss.ge_1_k", &LossConfig::ge_1_k, "[0, 1]", {-1, 2, nan}},
      {"loss.p13", &LossConfig::p13, "[0, 1]", {-1, 2, nan}},
      {"loss.p31", &LossConfig::p31, "[0, 1]", {-1, 2, nan}},
      {"loss.p32", &LossConfig::p32, "[0, 1]", {-1, 2, nan}},
      {"loss.p23", &LossConfig::p23, "[0, 1]", {-1, 2, nan}},
      {"loss.p14", &LossConfig::p14, "[0, 1]", {-1, 2, nan}},
  };
  for (const Field& f : fields) {
    for (double v : f.bad) {
      SCOPED_TRACE(testing::Message() << f.name << " = " << v);
      LossConfig c;
      c.kind = Kind::kBernoulli;
      c.*f.member = v;
      expect_rejected(validate(c), f.name, f.range, std::isnan(v));
    }
  }
  EXPECT_EQ(*validate(LossConfig{.ge_p = 1.5}), "loss.ge_p: must be in [0, 1] (got 1.5)");

  LossConfig c;
  c.kind = static_cast<Kind>(9);
  expect_rejected(validate(c), "loss.kind", "none, bernoulli", false);

  // Recurrence rules, for the kind in use only.
  c = {};
  c.kind = Kind::kGilbertElliott;
  c.ge_p = 0.1;
  c.ge_r = 0;
  expect_rejected(validate(c), "loss.ge_r", "(0, 1] when loss.ge_p > 0", false);
  c.kind = Kind::kBernoulli;
  EXPECT_FALSE(validate(c));
  c = {};
  c.kind = Kind::kFourState;
  c.p13 = 0.1;
  c.p31 = 0;
  expect_rejected(validate(c), "loss.p31", "(0, 1] when loss.p13 > 0", false);
  c.p31 = 0.5;
  c.p32 = 0.2;
  c.p23 = 0;
  expect_rejected(validate(c), "loss.p23", "(0, 1]", false);
  c.p23 = 0.1;
  EXPECT_FALSE(validate(c));
  c.p14 = 0.95;
  expect_rejected(validate(c), "loss.p14", "[0, 1 - p13]", false);
  c.p14 = 0;
  c.p32 = 0.6;
  expect_rejected(validate(c), "loss.p32", "[0, 1 - p31]", false);
  c = {};
  c.kind = Kind::kPattern;
  expect_rejected(validate(c), "loss.every_nth", ">= 1", false);
  c.drop_indices = {0};
  EXPECT_FALSE(validate(c));
  // Decimal round-off in a sum that is exactly 1 on paper is accepted.
  c = {};
  c.kind = Kind::kFourState;
  c.p13 = 0.7;
  c.p14 = 0.3;
  c.p31 = 0.1;
  EXPECT_FALSE(validate(c));
  for (Kind k : {Kind::kNone, Kind::kBernoulli, Kind::kCorrelated, Kind::kGilbertElliott, Kind::kFourState}) {
    LossConfig d;
    d.kind = k;
    EXPECT_FALSE(validate(d)) << static_cast<int>(k);  // defaults are valid
  }
  EXPECT_TRUE(std::isnan(LossModel::expected_loss_rate(LossConfig{.probability = nan})));
}

TEST(Validate, DelayAndReorderNameFieldAndRange) {
  const double nan = std::nan("");
  auto delay_with = [](auto f) {
    DelayConfig c;
    f(c);
    return validate(c);
  };
  expect_rejected(delay_with([](DelayConfig& c) { c.delay_ns = -1; }), "delay.delay_ns", "[0, 3600000000000]", false);
  expect_rejected(delay_with([](DelayConfig& c) { c.delay_ns = kMaxDelayNs + 1; }), "delay.delay_ns", "[0, ", false);
  expect_rejected(delay_with([](DelayConfig& c) { c.jitter_ns = -1; }), "delay.jitter_ns", "[0, ", false);
  expect_rejected(delay_with([](DelayConfig& c) { c.jitter_ns = kMaxDelayNs + 1; }), "delay.jitter_ns", "[0, ", false);
  expect_rejected(delay_with([](DelayConfig& c) { c.distribution = static_cast<Dist>(7); }), "delay.distribution",
                  "uniform, normal, pareto, paretonormal", false);
  for (double v : {-0.5, 1.0, nan})
    expect_rejected(delay_with([v](DelayConfig& c) { c.correlation = v; }), "delay.correlation", "[0, 1)",
                    std::isnan(v));
  EXPECT_FALSE(validate(DelayConfig{}));
  EXPECT_TRUE(std::isnan(DelayModel::quantile_ns(DelayConfig{.jitter_ns = -1}, 0.5)));

  for (double v : {-0.5, 1.5, nan})
    expect_rejected(validate(ReorderConfig{v, 0, 0}), "reorder.probability", "[0, 1]", std::isnan(v));
  for (double v : {-0.5, 1.0, nan})
    expect_rejected(validate(ReorderConfig{0.5, v, 0}), "reorder.correlation", "[0, 1)", std::isnan(v));
  EXPECT_FALSE(validate(ReorderConfig{1.0, 0.99, UINT32_MAX}));
}

// ---------- determinism and allocation ----------

std::vector<LossConfig> loss_zoo() {
  std::vector<LossConfig> z(6);
  z[1].kind = Kind::kBernoulli, z[1].probability = 0.1;
  z[2].kind = Kind::kCorrelated, z[2].probability = 0.1, z[2].correlation = 0.7;
  z[3].kind = Kind::kGilbertElliott, z[3].ge_p = 0.05, z[3].ge_r = 0.3, z[3].ge_1_h = 0.8, z[3].ge_1_k = 0.01;
  z[4].kind = Kind::kFourState, z[4].p13 = 0.05, z[4].p31 = 0.3, z[4].p32 = 0.2, z[4].p23 = 0.4, z[4].p14 = 0.02;
  z[5].kind = Kind::kPattern, z[5].every_nth = 7, z[5].drop_indices = {500, 3, 99, 1000};
  return z;
}

TEST(Determinism, SameSeedSameSequenceAndResetReplays) {
  for (const LossConfig& c : loss_zoo()) {
    SCOPED_TRACE(static_cast<int>(c.kind));
    LossModel m1(c), m2(c);
    Random r1(99), r2(99);
    std::vector<bool> first;
    for (int i = 0; i < 5000; ++i) {
      first.push_back(m1.drop(r1));
      ASSERT_EQ(first.back(), m2.drop(r2));
    }
    m1.reset();
    r1.reseed(99);
    for (int i = 0; i < 5000; ++i) ASSERT_EQ(m1.drop(r1), first[i]);
  }
  for (Dist d : {Dist::kUniform, Dist::kNormal, Dist::kPareto, Dist::kParetoNormal}) {
    for (double corr : {0.0, 0.5}) {
      DelayConfig c = delay_config(d);
      c.correlation = corr;
      EXPECT_EQ(draw(c, 7, 2000), draw(c, 7, 2000));
      EXPECT_NE(draw(c, 7, 2000), draw(c, 8, 2000));
      DelayModel m(c);
      Random rng(7);
      for (int i = 0; i < 100; ++i) m.arrival(i, rng);
      m.reset();
      rng.reseed(7);
      std::vector<Nanos> again(2000);
      for (auto& x : again) x = m.sample(rng);
      EXPECT_EQ(again, draw(c, 7, 2000));
    }
  }
  Reorderer a({0.3, 0.4, 3}), b({0.3, 0.4, 3});
  Random ra(3), rb(3);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(a.send_now(ra), b.send_now(rb));
}

TEST(Allocation, PerPacketPathsDoNotAllocate) {
  auto zoo = loss_zoo();
  std::vector<LossModel> losses(zoo.begin(), zoo.end());
  std::vector<DelayModel> delays;
  for (Dist d : {Dist::kUniform, Dist::kNormal, Dist::kPareto, Dist::kParetoNormal}) {
    DelayConfig c = delay_config(d);
    c.correlation = d == Dist::kPareto ? 0.3 : 0.0;
    delays.emplace_back(c);
  }
  Reorderer reorder({0.2, 0.3, 2});
  DelayHistogram hist;
  Random rng(5);
  const uint64_t before = g_allocations.load();
  for (int i = 0; i < 20000; ++i) {
    for (LossModel& m : losses) m.drop(rng);
    for (DelayModel& d : delays) hist.record(d.arrival(i * 100, rng) - i * 100);
    reorder.send_now(rng);
  }
  EXPECT_EQ(g_allocations.load() - before, 0u);
  EXPECT_GT(hist.count(), 0u);
}

}  // namespace
}  // namespace metaroce::emulator
