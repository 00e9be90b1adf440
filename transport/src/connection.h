// Internal: what every connection kind (MetaRoCE, RoCEv2) implements, and
// helpers they share. Not part of the public API.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "metaroce/transport/endpoint.h"
#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/udp_frame.h"
#include "sack_window.h"

namespace metaroce::transport {

// A retransmission timer that fires more than 1/kLateTimerFraction of its own
// length late, because the datapath polled late (poll_lateness, measured by the
// datapath), did not measure the peer's silence: this host was not running (a
// software datapath descheduled; a NIC's timer is never late), and the ACKs
// that would have stopped it may be queued behind the stall, in this host's
// rings or at a peer that stalled with it. Such a timer is given one more
// round trip from now, once per arming, instead of declaring loss. On an ideal
// clock (the simulator) the lateness is 0 and this never applies; live, each
// use is counted (ConnectionStats::late_timeouts_deferred).
inline constexpr Nanos kLateTimerFraction = 4;
inline bool timer_fired_late(Nanos deadline, Nanos timeout, Nanos now, Nanos poll_lateness) {
  return std::min(now - deadline, poll_lateness) > timeout / kLateTimerFraction;
}
// How long such a timer waits: one round trip (at least the timer granularity),
// or its whole timeout again before the first RTT sample.
inline Nanos late_timer_grace(double srtt, Nanos granularity, Nanos timeout) {
  return srtt > 0 ? std::max(static_cast<Nanos>(srtt), granularity) : timeout;
}

class Connection {
 public:
  Connection(Endpoint& ep, const ConnectionConfig& cfg) : ep_(ep), cfg_(cfg) {}
  virtual ~Connection() = default;

  virtual PostError post(uint16_t stream, const WorkRequest& wr) = 0;
  virtual PostError post_recv(uint16_t stream, const RecvRequest& rr) = 0;
  // frame is the whole Ethernet frame, v its parsed UDP view.
  virtual void on_packet(const wire::UdpFrameView& v, std::span<const uint8_t> frame, Nanos now) = 0;
  // MetaRoCE packets arrive already CRC-checked and decoded by the endpoint.
  virtual void on_metaroce_packet(const wire::UdpFrameView& v, const wire::PacketView& pv, Nanos now) {
    (void)v, (void)pv, (void)now;
  }
  // Produces at most one frame into f when something may be sent on a ready plane.
  virtual bool poll_tx(TxFrame& f, uint64_t ready_planes, Nanos now) = 0;
  virtual Nanos next_deadline() const = 0;
  virtual ConnectionStats stats() const = 0;
  // Bytes this connection's state occupies now: the object and the arrays it
  // allocated (ConnectionStats::state_bytes). It grows as the connection first
  // needs more, each growth also reported to the endpoint's total
  // (Endpoint::add_connection_state_bytes), and never shrinks before destruction.
  virtual size_t state_bytes() const = 0;
  virtual bool set_path_entropy(uint8_t path, uint16_t src_port) = 0;
  virtual bool prepare(uint16_t stream, ConnectionUse use) = 0;  // Endpoint::prepare

  const ConnectionConfig& config() const { return cfg_; }
  // Its index in the endpoint's connection list (the endpoint's schedule slot).
  size_t slot = 0;

 protected:
  // The UDP flow for a frame to the peer from src_port.
  wire::UdpFlow flow(uint16_t src_port, uint16_t dst_port) const {
    wire::UdpFlow f;
    f.src_mac = ep_.config().mac;
    f.dst_mac = cfg_.peer_mac;
    f.src_ip = ep_.config().ip;
    f.dst_ip = cfg_.peer_ip;
    f.src_port = src_port;
    f.dst_port = dst_port;
    return f;
  }

  Endpoint& ep_;
  ConnectionConfig cfg_;
};

// A message slot's chunk bitmap: a view of words its slot array owns (one
// block for every slot, see SlotArray below), so a slot is
// reset and reused without allocating; set() reports whether the bit was new.
class ChunkBitmap {
 public:
  void bind(uint64_t* words, uint32_t count) { words_ = words, count_ = count; }
  void clear() { std::fill_n(words_, count_, 0); }
  bool test(size_t i) const { return (words_[i >> 6] >> (i & 63)) & 1; }
  bool set(size_t i) {
    const uint64_t m = 1ull << (i & 63);
    if (words_[i >> 6] & m) return false;
    words_[i >> 6] |= m;
    return true;
  }
  void reset(size_t i) { words_[i >> 6] &= ~(1ull << (i & 63)); }

 private:
  uint64_t* words_ = nullptr;
  uint32_t count_ = 0;
};

// Slots of one kind (a stream's requests, responses, receive window, posted
// receives; a QP's work requests), allocated when first needed (allocate), with
// every slot's chunk bitmaps carved from one block. size() is the capacity from the
// start, so sequence arithmetic (msg_seq % size()) and window checks do not
// depend on whether the slots exist yet; a slot is only indexed once they do.
template <typename Slot>
class SlotArray {
 public:
  explicit SlotArray(uint32_t size = 0) : size_(size) {}
  uint32_t size() const { return size_; }
  bool allocated() const { return slots_ != nullptr; }
  Slot& operator[](uint32_t i) { return slots_[i]; }
  const Slot& operator[](uint32_t i) const { return slots_[i]; }
  // Allocates the slots (value-initialised) and, for each bitmap member named
  // (&Slot::member), bitmap_words zeroed words per slot. Returns the bytes allocated.
  template <typename... Bitmap>
  size_t allocate(uint32_t bitmap_words = 0, Bitmap... bitmaps) {
    slots_ = std::make_unique<Slot[]>(size_);
    const size_t words = static_cast<size_t>(size_) * sizeof...(Bitmap) * bitmap_words;
    if (words) bits_ = std::make_unique<uint64_t[]>(words);
    uint64_t* w = bits_.get();
    for (uint32_t i = 0; i < size_; ++i)
      ((slots_[i].*bitmaps).bind(std::exchange(w, w + bitmap_words), bitmap_words), ...);
    return static_cast<size_t>(size_) * sizeof(Slot) + words * sizeof(uint64_t);
  }

 private:
  uint32_t size_ = 0;
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<uint64_t[]> bits_;
};

std::unique_ptr<Connection> make_metaroce_connection(Endpoint& ep, const ConnectionConfig& cfg);
std::unique_ptr<Connection> make_rocev2_connection(Endpoint& ep, const ConnectionConfig& cfg);

}  // namespace metaroce::transport
