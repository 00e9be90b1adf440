// Fixed-size log-linear histogram of non-negative nanosecond values (delays,
// latencies), in the spirit of HdrHistogram: one bucket per value below
// 64 ns, then each power of two [2^e, 2^(e+1)) split into 64 equal buckets
// (so still exact up to 127 ns), up to 2^37 ns (~137 s). Storage is a fixed
// array inside the object (kBuckets = 2048 counters, 16 KiB): record() is O(1)
// and never allocates, so it can sit on the per-packet path; percentile()
// walks the buckets and belongs off it.
//
// Precision: percentile(q) returns the midpoint of the bucket holding the
// nearest-rank sample (the ceil(q * count())-th smallest, the smallest for
// q = 0), clamped to [min(), max()]. It differs from that sample by at most
// half a bucket, i.e. 1/128 (~0.8%) of the sample's value; it is exact below
// 128 ns and at the two ends (rank 1 is min(), rank count() is max()).
// min(), max(), count() are exact; mean() and stddev() are kept with
// Welford's running update of the recorded (unbucketed) values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace metaroce::emulator {

using Nanos = int64_t;

class DelayHistogram {
 public:
  static constexpr int kSubBits = 6;                           // 64 buckets per power of two
  static constexpr Nanos kLinearLimit = Nanos{1} << kSubBits;  // one bucket per value below this
  static constexpr int kMaxExponent = 37;                      // values up to 2^37 - 1 ns
  static constexpr Nanos kMaxTrackable = (Nanos{1} << kMaxExponent) - 1;
  static constexpr size_t kBuckets = (kMaxExponent - kSubBits + 1) << kSubBits;

  DelayHistogram() = default;

  // Adds one value, ns. Values below 0 are recorded as 0 and values above
  // kMaxTrackable as kMaxTrackable (both counted in saturated()); min() and
  // max() see the clamped value too, so every statistic stays consistent.
  void record(Nanos ns);
  // Adds `times` copies of one value (e.g. every frame of a burst that waited
  // the same time), as `times` calls of record(ns) would.
  void record(Nanos ns, uint64_t times);

  uint64_t count() const { return count_; }
  // Values clamped by record(): out of [0, kMaxTrackable].
  uint64_t saturated() const { return saturated_; }
  // Smallest / largest recorded value, ns; 0 when empty.
  Nanos min() const { return count_ ? min_ : 0; }
  Nanos max() const { return count_ ? max_ : 0; }
  // Arithmetic mean and population standard deviation, ns; 0 when empty.
  double mean() const;
  double stddev() const;
  // Nearest-rank q-quantile, ns, for q in [0, 1] (clamped; NaN reads as 0):
  // 0.5 = p50, 0.99 = p99, 0.999 = p99.9. 0 when empty.
  Nanos percentile(double q) const;

  // How many recorded values are below edge (ns): exact when edge - 1 is a
  // bucket's upper bound (every multiple of 2^(e-6) in [2^e, 2^(e+1)], e.g. the
  // edges of a Prometheus export); otherwise it counts the whole bucket that
  // holds edge - 1, so it may count values up to half a bucket above it.
  uint64_t count_below(Nanos edge) const;

  void reset();
  // Adds every value of other into this one (same fixed layout, so exact).
  void merge(const DelayHistogram& other);

  // Bucket layout, for exporters (e.g. Prometheus buckets): bucket i holds
  // values in [bucket_lower(i), bucket_upper(i)], both inclusive.
  static size_t bucket_index(Nanos ns);  // ns in [0, kMaxTrackable]
  static Nanos bucket_lower(size_t i);
  static Nanos bucket_upper(size_t i);
  uint64_t bucket_count(size_t i) const { return i < kBuckets ? buckets_[i] : 0; }

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t saturated_ = 0;
  Nanos min_ = 0;
  Nanos max_ = 0;
  double mean_ = 0;  // Welford: running mean
  double m2_ = 0;    // and sum of squared deviations from it
};

}  // namespace metaroce::emulator
