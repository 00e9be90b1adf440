// Congestion control, sender side: ECN-driven AIMD windows per path and per
// connection (DCTCP-style cut in proportion to the marked fraction, once per
// window of data), slow start until the first mark. Loss alone never shrinks a
// window: the fabric is lossy by design and loss is repaired, not obeyed; only
// ECN marks and retransmission timeouts (a path that went silent) do.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sack_window.h"  // seq_diff

namespace metaroce::transport {

struct CcParams {
  double mss = 4096;               // bytes of one full packet on the wire
  double init_cwnd_packets = 16;
  double max_cwnd_packets = 250;
  double additive_increase_packets = 1;  // per window of acknowledged data
  double gain = 1.0 / 16;          // EWMA gain of the marked fraction
};

class PathCongestion {
 public:
  explicit PathCongestion(const CcParams& p = {}) : p_(p) { reset(); }

  void reset() {
    cwnd_ = p_.init_cwnd_packets * p_.mss;
    ssthresh_ = p_.max_cwnd_packets * p_.mss;
    alpha_ = 0;
    acked_ = marked_ = 0;
  }

  // An ACK acknowledged `packets` (`bytes`) of which `ce` were CE-marked.
  // floor/next_seq delimit the path's window: the marked fraction is evaluated
  // once every window's worth of data. Returns the multiplicative cut applied
  // (1.0 = none) so the connection window can follow.
  double on_ack(uint32_t packets, uint32_t bytes, uint32_t ce, uint32_t floor, uint32_t next_seq) {
    double cut = 1.0;
    acked_ += packets;
    marked_ += ce;
    if (seq_diff(floor, window_end_) >= 0) {
      const double frac = acked_ ? std::min(1.0, static_cast<double>(marked_) / acked_) : 0.0;
      alpha_ = (1 - p_.gain) * alpha_ + p_.gain * frac;
      if (marked_ > 0) {
        // First marks end slow start: take at least a DCTCP cut of alpha_=gain.
        cut = 1 - std::max(alpha_, p_.gain) / 2;
        cwnd_ = std::max(p_.mss, cwnd_ * cut);
        ssthresh_ = cwnd_;
      }
      acked_ = marked_ = 0;
      window_end_ = next_seq;
    }
    if (ce == 0 && bytes) {
      if (cwnd_ < ssthresh_) cwnd_ += bytes;
      else cwnd_ += p_.additive_increase_packets * p_.mss * bytes / cwnd_;
    }
    cwnd_ = std::min(cwnd_, p_.max_cwnd_packets * p_.mss);
    return cut;
  }

  // The path went silent for a whole RTO: restart from one packet.
  void on_timeout() {
    ssthresh_ = std::max(ssthresh_ / 2, 2 * p_.mss);
    cwnd_ = p_.mss;
  }

  double cwnd() const { return cwnd_; }
  double ssthresh() const { return ssthresh_; }
  double alpha() const { return alpha_; }

 private:
  CcParams p_;
  double cwnd_ = 0, ssthresh_ = 0, alpha_ = 0;
  uint64_t acked_ = 0, marked_ = 0;
  uint32_t window_end_ = 0;
};

// The connection's window over all paths: additive increase on acknowledged
// data, and each path's ECN cut applied in proportion to that path's share.
class ConnectionCongestion {
 public:
  ConnectionCongestion(double mss, double max_packets) : mss_(mss), max_(max_packets * mss), cwnd_(max_) {}
  void on_ack(uint32_t bytes, bool marked, double path_cut, size_t paths) {
    if (path_cut < 1.0) cwnd_ = std::max(mss_, cwnd_ * (1 - (1 - path_cut) / static_cast<double>(paths)));
    else if (!marked && bytes) cwnd_ += mss_ * bytes / std::max(cwnd_, 1.0);
    cwnd_ = std::min(cwnd_, max_);
  }
  double cwnd() const { return cwnd_; }

 private:
  double mss_, max_, cwnd_;
};

}  // namespace metaroce::transport
