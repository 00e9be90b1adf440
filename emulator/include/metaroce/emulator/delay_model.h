// Extra one-way delay with jitter (netem "delay TIME JITTER CORRELATION
// distribution D") and netem-style reordering (netem "reorder P C gap G").
//
// Both are decided per packet, in packet order, without allocation and only
// from the Random passed in, so a seeded run replays exactly.
//
// Sampling is analytic inverse-transform sampling: every packet gets one
// uniform u in (0, 1) (correlated across packets when asked, see
// DelayConfig::correlation) and its delay is Q(u) for the distribution's
// quantile function Q below. netem approximates the same functions with
// 4096-entry int16 tables, which also cut its tails (normal near
// delay + 3.5 * jitter, pareto at delay + 4 * jitter); we compute them
// exactly and do not cut.
//
// With D = delay_ns, J = jitter_ns, z = Phi^-1(u) (standard normal quantile):
//   kUniform       D + J * (2u - 1)                       uniform on [D - J, D + J]
//   kNormal        D + J * z                              mean D, stddev J
//   kPareto        D + J * (4/3) * ((1 - u)^(-1/3) - 3/2)
//                  Pareto with shape alpha = 3 (netem's), shifted to mean D:
//                  minimum D - 2J/3, stddev 2J/sqrt(3) ~= 1.155 J, heavy right
//                  tail (P(X > D + xJ) falls as x^-3).
//   kParetoNormal  D + J * (z / 4 + (1 - u)^(-1/3) - 3/2)
//                  netem's mix: 1/4 of the normal plus 3/4 of the pareto
//                  offset, both taken at the same quantile u (that is how
//                  netem's paretonormal table is built), mean D.
// Jitter is therefore netem's "sigma": the half-width for uniform, the
// standard deviation for normal, the pareto scale as netem applies it.
//
// The result is rounded to the nearest nanosecond and clamped to
// [0, kMaxSampleNs]: a negative draw (normal or uniform with J > D) becomes 0,
// i.e. the packet leaves with no extra delay. That clamping raises the mean
// above D when J is comparable to D; quantile_ns() applies the same clamp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "metaroce/emulator/random.h"

namespace metaroce::emulator {

using Nanos = int64_t;

struct DelayConfig {
  // Constant part of the extra delay, ns, in [0, kMaxDelayNs] (one hour).
  Nanos delay_ns = 0;
  // Scale of the random part, ns, in [0, kMaxDelayNs]; meaning per
  // distribution in the table above. 0 = constant delay, no draws.
  Nanos jitter_ns = 0;
  // Shape of the random part; see the table above. Default kUniform is also
  // what netem does when no distribution table is given (its man page says
  // normal, the kernel code uses uniform).
  enum class Distribution : uint8_t { kUniform, kNormal, kPareto, kParetoNormal };
  Distribution distribution = Distribution::kUniform;
  // Correlation of successive jitter samples, unitless, in [0, 1). We keep a
  // latent standard normal g_n = c * g_{n-1} + sqrt(1 - c^2) * e_n (e_n fresh
  // standard normal) and use u_n = Phi(g_n) as the packet's uniform (a
  // Gaussian copula). Every packet's delay then has exactly the configured
  // distribution, mean and quantiles whatever c is; successive normal delays
  // have Pearson correlation exactly c (other distributions: rank correlation
  // (6/pi) * asin(c/2)). netem instead blends the uniforms,
  // u_n = (1 - c) * fresh + c * u_{n-1}, which narrows the distribution: with
  // correlation its jitter is smaller than configured.
  double correlation = 0;
  // false (default): a FIFO wire. A packet never arrives before the packet
  // that went through arrival() before it: its arrival is raised to the
  // previous one's if its own sample would pass it, so jitter shows up as
  // delay variation and bunching, never as reordering (netem reorders
  // whenever jitter exceeds the packet spacing). true: each packet keeps its
  // own sample and jitter may reorder, as in netem.
  bool allow_reorder = false;

  bool operator==(const DelayConfig&) const = default;
};

// Upper bound of delay_ns and jitter_ns: one hour, ns.
inline constexpr Nanos kMaxDelayNs = 3'600'000'000'000;
// Upper clamp of a sample: keeps depart + sample far from int64 overflow.
inline constexpr Nanos kMaxSampleNs = Nanos{1} << 62;

// Returns nullopt if usable, else an error starting with the field name and
// giving the allowed range, e.g. "delay.jitter_ns: must be in [0, ...] (got -1)".
std::optional<std::string> validate(const DelayConfig& c);

class DelayModel {
 public:
  explicit DelayModel(const DelayConfig& config = {});

  // Extra delay for the next packet, ns, in [0, kMaxSampleNs] (see the
  // clamping note above). One uniform draw per packet when jitter_ns > 0 (and
  // a normal quantile for correlated or normal-based shapes); none when
  // jitter_ns == 0. Same seed and config -> same sequence.
  Nanos sample(Random& rng);

  // Arrival time of a packet leaving the serialiser at `depart`:
  // depart + sample(), then, unless allow_reorder, raised to the arrival of
  // the previous packet given to arrival() (FIFO). Saturates instead of
  // overflowing. A packet that a Reorderer sends at once must not go through
  // arrival(): it skips the delay and leaves the FIFO watermark alone.
  Nanos arrival(Nanos depart, Random& rng);

  // Forgets the correlation state and the FIFO watermark.
  void reset();

  const DelayConfig& config() const { return config_; }

  // q-quantile of sample() before rounding: max(0, Q(q)) with Q from the
  // table above, for q in [0, 1] (clamped); exact, for tests and reports.
  static double quantile_ns(const DelayConfig& c, double q);

 private:
  DelayConfig config_;
  double latent_ = 0;         // g_{n-1} of the copula
  bool have_latent_ = false;  // first packet starts the chain from a fresh draw
  Nanos last_arrival_ = INT64_MIN;
};

// netem "reorder PERCENT [CORRELATION] [gap DISTANCE]". A packet chosen for
// reordering skips the configured extra delay (it is sent at once) and so
// overtakes packets still being delayed; without a delay there is nothing to
// overtake (tc refuses reorder without delay; we let the caller decide).
struct ReorderConfig {
  // Probability that an eligible packet is sent at once, unitless, [0, 1].
  double probability = 0;
  // [0, 1): with this probability an eligible packet repeats the previous
  // eligible packet's decision, else it draws Bernoulli(probability); keeps the
  // mean, like LossConfig::correlation (netem blends uniforms instead).
  double correlation = 0;
  // Packets, [0, 2^32 - 1]. netem's exact rule, which we follow: a counter
  // holds the number of packets delayed since the last reordered one; a
  // packet is eligible only when that counter is >= gap - 1, and a reordered
  // packet resets it. So after each reordered packet the next gap - 1 packets
  // are always delayed; the packets after that are each eligible until one is
  // reordered. With probability 1 this reorders exactly packets gap, 2*gap,
  // ... (1-based); with probability p < 1 it is not "every gap-th packet on
  // a fixed grid" but a renewal process, and the long-run fraction reordered
  // is p / (1 + (gap - 1) * p) (expected_fraction()). The kernel treats
  // gap 0 as "never reorder", but tc turns an omitted gap into 1, so for
  // users 0 and 1 both mean every packet is eligible; so it is here.
  uint32_t gap = 0;

  bool operator==(const ReorderConfig&) const = default;
};

// Returns nullopt if usable, else an error starting with "reorder.<field>".
std::optional<std::string> validate(const ReorderConfig& c);

class Reorderer {
 public:
  explicit Reorderer(const ReorderConfig& config = {});

  // true: send this packet at once (skip the extra delay). No allocation;
  // draws nothing while probability == 0 or the packet is not eligible.
  bool send_now(Random& rng);

  void reset();
  const ReorderConfig& config() const { return config_; }

  // Long-run fraction of packets reordered, exact (renewal argument: after a
  // reorder, gap - 1 ineligible packets, then eligible ones until the next).
  static double expected_fraction(const ReorderConfig& c);

 private:
  ReorderConfig config_;
  uint64_t delayed_since_ = 0;  // netem's counter
  bool have_last_ = false;
  bool last_ = false;
};

}  // namespace metaroce::emulator
