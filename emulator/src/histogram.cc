#include "metaroce/emulator/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace metaroce::emulator {

size_t DelayHistogram::bucket_index(Nanos ns) {
  const auto v = static_cast<uint64_t>(std::clamp<Nanos>(ns, 0, kMaxTrackable));
  if (v < static_cast<uint64_t>(kLinearLimit)) return static_cast<size_t>(v);
  const int e = std::bit_width(v) - 1;  // kSubBits .. kMaxExponent - 1
  const uint64_t sub = (v >> (e - kSubBits)) - kLinearLimit;
  return (static_cast<size_t>(e - kSubBits + 1) << kSubBits) + static_cast<size_t>(sub);
}

Nanos DelayHistogram::bucket_lower(size_t i) {
  if (i < static_cast<size_t>(kLinearLimit)) return static_cast<Nanos>(i);
  const int group = static_cast<int>(i >> kSubBits);  // 1 .. kMaxExponent - kSubBits
  const Nanos sub = static_cast<Nanos>(i & (kLinearLimit - 1));
  return (kLinearLimit + sub) << (group - 1);
}

Nanos DelayHistogram::bucket_upper(size_t i) {
  if (i < static_cast<size_t>(kLinearLimit)) return static_cast<Nanos>(i);
  const int group = static_cast<int>(i >> kSubBits);
  return bucket_lower(i) + (Nanos{1} << (group - 1)) - 1;
}

void DelayHistogram::record(Nanos ns) { record(ns, 1); }

void DelayHistogram::record(Nanos ns, uint64_t times) {
  if (times == 0) return;
  if (ns < 0 || ns > kMaxTrackable) {
    saturated_ += times;
    ns = std::clamp<Nanos>(ns, 0, kMaxTrackable);
  }
  buckets_[bucket_index(ns)] += times;
  if (count_ == 0 || ns < min_) min_ = ns;
  if (count_ == 0 || ns > max_) max_ = ns;
  // Welford's update for `times` equal values (Chan et al.'s pairwise merge
  // with a group of zero variance).
  const double n_a = static_cast<double>(count_), n_b = static_cast<double>(times);
  count_ += times;
  const double x = static_cast<double>(ns);
  const double delta = x - mean_;
  mean_ += delta * n_b / static_cast<double>(count_);
  m2_ += delta * delta * n_a * n_b / static_cast<double>(count_);
}

double DelayHistogram::mean() const { return count_ ? mean_ : 0.0; }

double DelayHistogram::stddev() const { return count_ ? std::sqrt(m2_ / static_cast<double>(count_)) : 0.0; }

Nanos DelayHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  if (!(q > 0)) q = 0;
  if (q > 1) q = 1;
  // Nearest rank, 1-based: ceil(q * n), at least 1.
  const double r = std::ceil(q * static_cast<double>(count_));
  const uint64_t rank = std::clamp<uint64_t>(static_cast<uint64_t>(r), 1, count_);
  if (rank == 1) return min_;  // both ends are known exactly
  if (rank == count_) return max_;
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      const Nanos lo = bucket_lower(i);
      const Nanos mid = lo + (bucket_upper(i) - lo) / 2;
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

uint64_t DelayHistogram::count_below(Nanos edge) const {
  if (edge <= 0) return 0;
  if (edge > kMaxTrackable) return count_;
  const size_t last = bucket_index(edge - 1);
  uint64_t n = 0;
  for (size_t i = 0; i <= last; ++i) n += buckets_[i];
  return n;
}

void DelayHistogram::reset() {
  buckets_.fill(0);
  count_ = saturated_ = 0;
  min_ = max_ = 0;
  mean_ = m2_ = 0;
}

void DelayHistogram::merge(const DelayHistogram& o) {
  if (o.count_ == 0) return;
  for (size_t i = 0; i < kBuckets; ++i) buckets_[i] += o.buckets_[i];
  // Chan et al.'s pairwise combination of Welford states.
  const double n1 = static_cast<double>(count_), n2 = static_cast<double>(o.count_);
  const double delta = o.mean_ - mean_;
  const double n = n1 + n2;
  mean_ += delta * n2 / n;
  m2_ += o.m2_ + delta * delta * n1 * n2 / n;
  min_ = count_ ? std::min(min_, o.min_) : o.min_;
  max_ = count_ ? std::max(max_, o.max_) : o.max_;
  count_ += o.count_;
  saturated_ += o.saturated_;
}

}  // namespace metaroce::emulator
