// AF_XDP port: one AF_XDP socket per device queue (PortConfig::queue ..
// queue + queues - 1), each with its own UMEM, fill and completion rings.
//
// UMEM layout, per queue: ring_size RX frames, then ring_size TX frames, each
// `chunk` bytes, chunk = the smallest power of two >= max(2048, frame_size +
// XDP_PACKET_HEADROOM): aligned-mode UMEM needs a power of two, and the kernel
// writes a received frame 256 bytes into its chunk. The kernel rejects chunks
// above the page size (EINVAL; seen on 6.18 even with hugepage-backed UMEM),
// so frame_size is at most 3840 here; jumbo frames would need XDP
// multi-buffer (XDP_USE_SG), not implemented.
//
// Frame ownership (nothing is allocated after open):
// - RX frames circulate fill ring -> kernel -> RX ring -> rx_burst() caller
//   -> back to the fill ring at the next rx_burst(). The fill ring holds
//   ring_size entries, so there is always room to return them.
// - TX frames sit on a fixed free list (a stack of UMEM addresses): tx_burst()
//   pops one per frame and copies into it, the completion ring gives it back.
//   Every TX descriptor owns a frame, so a non-empty free list implies a free
//   TX ring slot; an empty free list is the back-pressure tx_burst() reports.
// - flush() kicks the kernel with sendto() only when the TX ring says
//   needs_wakeup. In copy mode the kernel sends at most one batch (32 frames in
//   current kernels) per kick and answers EAGAIN while more remain, so flush()
//   kicks again, bounded, until the ring is empty.
//
// Steering (afxdp/xdp_program.h): our XDP program redirects UDP to
// PortConfig::udp_ports (default MetaRoCE 4794 and RoCEv2 4791) or, in bridge
// mode, every frame; the rest goes to the kernel.
#include <linux/bpf.h>
#include <linux/ethtool.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "backends.h"
#include "xdp_program.h"

namespace metaroce::datapath {
namespace {

constexpr uint32_t kMinChunk = 2048;  // XDP_UMEM_MIN_CHUNK_SIZE
constexpr uint32_t kMinRing = 32, kMaxRing = 16384;
const std::vector<uint16_t> kDefaultUdpPorts = {4794, 4791};  // MetaRoCE, RoCEv2

std::string errno_text(int err) { return std::strerror(err < 0 ? -err : err); }

uint32_t round_up_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// Receive queues of ifname in the calling thread's namespace, or 0 when the
// driver does not say (then bind() is the judge).
uint32_t rx_queue_count(const std::string& ifname) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  ethtool_channels channels{};
  channels.cmd = ETHTOOL_GCHANNELS;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&channels);
  const int rc = ioctl(fd, SIOCETHTOOL, &ifr);
  close(fd);
  if (rc != 0) return 0;
  return channels.rx_count + channels.combined_count;
}

struct Queue {
  uint32_t id = 0;
  uint8_t* area = nullptr;  // this queue's UMEM
  xsk_umem* umem = nullptr;
  xsk_socket* xsk = nullptr;
  // libxdp keeps pointers to these rings: a Queue never moves once opened.
  xsk_ring_prod fill{};
  xsk_ring_cons comp{};
  xsk_ring_cons rx{};
  xsk_ring_prod tx{};
  int fd = -1;
  bool zero_copy = false;
  std::vector<uint64_t> tx_free;  // free TX frames (UMEM offsets), a stack; sized ring_size at open
  uint32_t tx_free_count = 0;
  std::vector<uint64_t> rx_held;  // RX frames lent out by the last rx_burst(); sized ring_size at open
  uint32_t rx_held_count = 0;
  bool kick_pending = false;  // TX descriptors submitted since the kernel last emptied the ring
};

class AfxdpPort final : public Port {
 public:
  AfxdpPort() = default;
  ~AfxdpPort() override;
  AfxdpPort(const AfxdpPort&) = delete;
  AfxdpPort& operator=(const AfxdpPort&) = delete;

  bool open(const PortConfig& config, std::string* error);

  const char* kind() const override { return "afxdp"; }
  const std::string& name() const override { return name_; }
  size_t rx_burst(std::span<RxFrame> out) override;
  size_t tx_burst(std::span<const std::span<const uint8_t>> frames) override;
  void flush() override;
  bool tx_ready() const override;
  int wait_fd() const override { return wait_fd_; }
  PortStats stats() const override;

 private:
  bool open_queue(Queue& q, size_t index, const PortConfig& config, std::string* error);
  void recycle_rx(Queue& q);
  void drain_completions(Queue& q);

  std::string name_;
  std::string ifname_;
  uint32_t chunk_ = 0;
  uint32_t ring_ = 0;
  uint32_t max_frame_ = 0;
  uint8_t* umem_area_ = nullptr;
  size_t umem_bytes_ = 0;
  size_t queue_bytes_ = 0;
  std::unique_ptr<Queue[]> queues_;
  uint32_t nqueues_ = 0;
  uint32_t rx_next_ = 0;  // first queue rx_burst() serves, rotated for fairness
  std::unique_ptr<afxdp::XdpProgram> program_;
  int epoll_fd_ = -1;
  int wait_fd_ = -1;
  PortStats stats_;
  uint64_t tx_unsendable_ = 0;  // empty or larger than frame_size: consumed, not sent (PortStats has no field yet)
};

AfxdpPort::~AfxdpPort() {
  program_.reset();  // detach first, so the kernel stops steering frames to sockets about to close
  for (uint32_t i = 0; queues_ && i < nqueues_; ++i) {
    if (queues_[i].xsk) xsk_socket__delete(queues_[i].xsk);
    if (queues_[i].umem) xsk_umem__delete(queues_[i].umem);
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (umem_area_) munmap(umem_area_, umem_bytes_);
}

bool AfxdpPort::open(const PortConfig& config, std::string* error) {
  name_ = config.name;
  ifname_ = config.ifname;
  if (config.xdp_mode != "auto" && config.xdp_mode != "native" && config.xdp_mode != "skb") {
    *error = "xdp_mode: must be auto, native or skb (got '" + config.xdp_mode + "')";
    return false;
  }
  if (config.ifname.empty()) {
    *error = "ifname: required for kind 'afxdp'";
    return false;
  }
  if (config.queues == 0 || config.queue >= afxdp::kXsksMapEntries ||
      config.queues > afxdp::kXsksMapEntries - config.queue) {
    *error = "queues: queue " + std::to_string(config.queue) + " + queues " + std::to_string(config.queues) +
             " must be in [1, " + std::to_string(afxdp::kXsksMapEntries) + "]";
    return false;
  }
  if (config.ring_size < kMinRing || config.ring_size > kMaxRing ||
      (config.ring_size & (config.ring_size - 1)) != 0) {
    *error = "ring_size: AF_XDP rings must be a power of two in [" + std::to_string(kMinRing) + ", " +
             std::to_string(kMaxRing) + "] (got " + std::to_string(config.ring_size) + ")";
    return false;
  }
  const std::vector<uint16_t>& ports = config.udp_ports.empty() ? kDefaultUdpPorts : config.udp_ports;
  if (ports.size() > afxdp::kMaxUdpPorts || std::find(ports.begin(), ports.end(), 0) != ports.end()) {
    *error = "udp_ports: at most " + std::to_string(afxdp::kMaxUdpPorts) + " ports, none 0 (got " +
             std::to_string(ports.size()) + ")";
    return false;
  }
  const unsigned ifindex = config.ifname.size() < IFNAMSIZ ? if_nametoindex(config.ifname.c_str()) : 0;
  if (ifindex == 0) {
    *error = "ifname: no such interface '" + config.ifname + "'";
    return false;
  }
  if (const uint32_t have = rx_queue_count(config.ifname); have != 0 && config.queue + config.queues > have) {
    *error = "queues: '" + config.ifname + "' has " + std::to_string(have) + " rx queue(s); queue " +
             std::to_string(config.queue) + " + queues " + std::to_string(config.queues) + " exceeds that";
    return false;
  }

  const uint32_t page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  if (config.frame_size + XDP_PACKET_HEADROOM > page) {
    *error = "frame_size: AF_XDP handles frames up to " + std::to_string(page - XDP_PACKET_HEADROOM) + " bytes (a " +
             std::to_string(page) + "-byte page per UMEM chunk, less " + std::to_string(XDP_PACKET_HEADROOM) +
             " B kernel headroom; got " + std::to_string(config.frame_size) + ")";
    return false;
  }

  // UMEM for all queues in one mapping, populated now so the hot path never faults.
  ring_ = config.ring_size;
  max_frame_ = config.frame_size;
  chunk_ = round_up_pow2(std::max<uint32_t>(kMinChunk, config.frame_size + XDP_PACKET_HEADROOM));
  nqueues_ = config.queues;
  queue_bytes_ = size_t{2} * ring_ * chunk_;
  umem_bytes_ = queue_bytes_ * nqueues_;
  void* area = mmap(nullptr, umem_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (area == MAP_FAILED) {
    *error = "afxdp: cannot map " + std::to_string(umem_bytes_) + " bytes of UMEM: " + errno_text(errno);
    umem_bytes_ = 0;
    return false;
  }
  umem_area_ = static_cast<uint8_t*>(area);

  program_ = afxdp::XdpProgram::load(config.bridge_mode, ports, error);
  if (!program_) return false;
  if (!afxdp::XdpProgram::clear_stale(static_cast<int>(ifindex), config.ifname, error)) return false;

  queues_.reset(new Queue[nqueues_]);
  for (uint32_t i = 0; i < nqueues_; ++i) {
    if (!open_queue(queues_[i], i, config, error)) return false;
  }
  if (!program_->attach(static_cast<int>(ifindex), config.ifname, config.xdp_mode, error)) return false;

  if (nqueues_ == 1) {
    wait_fd_ = queues_[0].fd;
  } else {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) {
      *error = "afxdp: epoll_create1: " + errno_text(errno);
      return false;
    }
    for (uint32_t i = 0; i < nqueues_; ++i) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = i;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, queues_[i].fd, &ev) != 0) {
        *error = "afxdp: epoll_ctl: " + errno_text(errno);
        return false;
      }
    }
    wait_fd_ = epoll_fd_;
  }
  return true;
}

bool AfxdpPort::open_queue(Queue& q, size_t index, const PortConfig& config, std::string* error) {
  q.id = config.queue + static_cast<uint32_t>(index);
  q.area = umem_area_ + index * queue_bytes_;
  const std::string where = "'" + config.ifname + "' queue " + std::to_string(q.id);

  xsk_umem_config umem_config{};
  umem_config.fill_size = ring_;
  umem_config.comp_size = ring_;
  umem_config.frame_size = chunk_;
  umem_config.frame_headroom = 0;
  umem_config.flags = 0;

  // One UMEM + socket + bind attempt; on failure nothing is left behind (a
  // failed bind leaves the UMEM's rings half set up, so it is not reused).
  bool umem_failed = false;
  auto bind_once = [&](bool zc) -> int {
    if (const int err = xsk_umem__create(&q.umem, q.area, queue_bytes_, &q.fill, &q.comp, &umem_config); err != 0) {
      q.umem = nullptr;
      umem_failed = true;
      return err;
    }
    xsk_socket_config socket_config{};
    socket_config.rx_size = ring_;
    socket_config.tx_size = ring_;
    socket_config.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // our own program, attached by XdpProgram
    socket_config.xdp_flags = 0;
    socket_config.bind_flags = XDP_USE_NEED_WAKEUP | (zc ? XDP_ZEROCOPY : XDP_COPY);
    const int err = xsk_socket__create(&q.xsk, config.ifname.c_str(), q.id, q.umem, &q.rx, &q.tx, &socket_config);
    if (err != 0) {
      q.xsk = nullptr;
      xsk_umem__delete(q.umem);
      q.umem = nullptr;
    }
    return err;
  };
  // The kernel releases a closed socket's hold on its queue from a work
  // queue, so a port closed (or a process gone) just now can still look busy
  // for a moment. Control plane only: wait for that, bounded (1 s).
  auto bind_with_retry = [&](bool zc) -> int {
    constexpr int kBusyRetries = 100;
    int err = bind_once(zc);
    for (int i = 0; err == -EBUSY && i < kBusyRetries; ++i) {
      const timespec pause{0, 10'000'000};
      nanosleep(&pause, nullptr);
      err = bind_once(zc);
    }
    return err;
  };

  const bool want_zc = config.zero_copy || config.require_zero_copy;
  int err = want_zc ? bind_with_retry(true) : -EOPNOTSUPP;
  if (want_zc && err != 0 && !umem_failed) {
    if (config.require_zero_copy) {
      *error = "zero_copy: " + where + " does not support AF_XDP zero-copy: " + errno_text(err) +
               " (require_zero_copy is set)";
      return false;
    }
  }
  if (err != 0 && !umem_failed) err = bind_with_retry(false);  // copy mode: without zero-copy, or as its fallback
  if (err != 0) {
    if (umem_failed) {
      *error = "afxdp: cannot register UMEM (" + std::to_string(queue_bytes_) + " bytes) for " + where + ": " +
               errno_text(err) + " (need CAP_IPC_LOCK or a larger RLIMIT_MEMLOCK)";
    } else if (err == -EBUSY) {
      *error = "queue: " + where + " is busy (another AF_XDP socket is bound to it)";
    } else if (err == -EPERM || err == -EACCES) {
      *error = "afxdp: cannot create AF_XDP socket on " + where + ": " + errno_text(err) + " (need CAP_NET_RAW)";
    } else {
      *error = "afxdp: cannot bind AF_XDP socket to " + where + ": " + errno_text(err);
    }
    return false;
  }
  q.fd = xsk_socket__fd(q.xsk);
  xdp_options options{};
  socklen_t options_len = sizeof(options);
  q.zero_copy = getsockopt(q.fd, SOL_XDP, XDP_OPTIONS, &options, &options_len) == 0 &&
                (options.flags & XDP_OPTIONS_ZEROCOPY) != 0;

  // Every RX frame starts in the fill ring, every TX frame on the free list.
  uint32_t idx = 0;
  if (xsk_ring_prod__reserve(&q.fill, ring_, &idx) != ring_) {
    *error = "afxdp: cannot populate the fill ring of " + where;
    return false;
  }
  for (uint32_t i = 0; i < ring_; ++i) *xsk_ring_prod__fill_addr(&q.fill, idx + i) = uint64_t{i} * chunk_;
  xsk_ring_prod__submit(&q.fill, ring_);
  q.tx_free.resize(ring_);
  for (uint32_t i = 0; i < ring_; ++i) q.tx_free[i] = uint64_t{ring_ + (ring_ - 1 - i)} * chunk_;
  q.tx_free_count = ring_;
  q.rx_held.resize(ring_);

  if (const int err = xsk_socket__update_xskmap(q.xsk, program_->xsks_map_fd()); err != 0) {
    *error = "afxdp: cannot register the socket of " + where + " with the XDP program: " + errno_text(err);
    return false;
  }
  return true;
}

void AfxdpPort::recycle_rx(Queue& q) {
  if (q.rx_held_count == 0) return;
  uint32_t idx = 0;
  // Cannot fail: the fill ring has a slot for every RX frame.
  if (xsk_ring_prod__reserve(&q.fill, q.rx_held_count, &idx) != q.rx_held_count) return;
  for (uint32_t i = 0; i < q.rx_held_count; ++i) *xsk_ring_prod__fill_addr(&q.fill, idx + i) = q.rx_held[i];
  xsk_ring_prod__submit(&q.fill, q.rx_held_count);
  q.rx_held_count = 0;
}

void AfxdpPort::drain_completions(Queue& q) {
  uint32_t idx = 0;
  const uint32_t n = xsk_ring_cons__peek(&q.comp, ring_, &idx);
  if (n == 0) return;
  for (uint32_t i = 0; i < n; ++i) q.tx_free[q.tx_free_count++] = *xsk_ring_cons__comp_addr(&q.comp, idx + i);
  xsk_ring_cons__release(&q.comp, n);
}

size_t AfxdpPort::rx_burst(std::span<RxFrame> out) {
  size_t got = 0;
  const uint64_t chunk_mask = ~uint64_t{chunk_ - 1};
  for (uint32_t k = 0; k < nqueues_; ++k) {
    Queue& q = queues_[(rx_next_ + k) % nqueues_];
    recycle_rx(q);  // the previous burst's frames are the caller's no longer
    if (got == out.size()) continue;
    uint32_t idx = 0;
    const uint32_t n = xsk_ring_cons__peek(&q.rx, static_cast<uint32_t>(std::min<size_t>(out.size() - got, ring_)), &idx);
    if (n == 0) {
      if (xsk_ring_prod__needs_wakeup(&q.fill)) {  // zero-copy drivers may sleep until kicked
        recvfrom(q.fd, nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
        ++stats_.wakeups;
      }
      continue;
    }
    for (uint32_t i = 0; i < n; ++i) {
      const xdp_desc* desc = xsk_ring_cons__rx_desc(&q.rx, idx + i);
      const uint64_t addr = xsk_umem__add_offset_to_addr(desc->addr);
      out[got].data = q.area + addr;
      out[got].len = desc->len;
      stats_.rx_bytes += desc->len;
      ++got;
      q.rx_held[q.rx_held_count++] = addr & chunk_mask;
    }
    xsk_ring_cons__release(&q.rx, n);
  }
  if (++rx_next_ == nqueues_) rx_next_ = 0;
  stats_.rx_frames += got;
  return got;
}

size_t AfxdpPort::tx_burst(std::span<const std::span<const uint8_t>> frames) {
  size_t taken = 0;
  for (uint32_t k = 0; k < nqueues_ && taken < frames.size(); ++k) {
    Queue& q = queues_[k];
    drain_completions(q);
    uint32_t submitted = 0;
    while (taken < frames.size() && q.tx_free_count > 0) {
      const std::span<const uint8_t> frame = frames[taken];
      if (frame.empty() || frame.size() > max_frame_) {  // the kernel would reject it; never retry it
        ++tx_unsendable_;
        ++taken;
        continue;
      }
      uint32_t idx = 0;
      if (xsk_ring_prod__reserve(&q.tx, 1, &idx) != 1) break;  // cannot happen: each descriptor owns a frame
      const uint64_t addr = q.tx_free[--q.tx_free_count];
      std::memcpy(q.area + addr, frame.data(), frame.size());
      xdp_desc* desc = xsk_ring_prod__tx_desc(&q.tx, idx);
      desc->addr = addr;
      desc->len = static_cast<uint32_t>(frame.size());
      desc->options = 0;
      stats_.tx_bytes += frame.size();
      ++submitted;
      ++taken;
    }
    if (submitted > 0) {
      xsk_ring_prod__submit(&q.tx, submitted);
      q.kick_pending = true;
      stats_.tx_frames += submitted;
    }
  }
  stats_.tx_ring_full += frames.size() - taken;
  return taken;
}

void AfxdpPort::flush() {
  for (uint32_t k = 0; k < nqueues_; ++k) {
    Queue& q = queues_[k];
    if (!q.kick_pending) continue;
    if (!xsk_ring_prod__needs_wakeup(&q.tx)) {  // the driver is polling the ring itself
      q.kick_pending = false;
      continue;
    }
    const uint32_t max_kicks = ring_ / 16 + 2;  // > ring_size / batch: bounded even if the device stalls
    for (uint32_t kick = 0; kick < max_kicks; ++kick) {
      const ssize_t rc = sendto(q.fd, nullptr, 0, MSG_DONTWAIT, nullptr, 0);
      const int err = rc < 0 ? errno : 0;
      ++stats_.wakeups;
      if (xsk_prod_nb_free(&q.tx, ring_) == ring_) {  // the kernel took every descriptor
        q.kick_pending = false;
        break;
      }
      // EAGAIN: one batch done, more to go (or the device queue is stopped);
      // EBUSY/ENOBUFS: the device dropped a frame, the rest may still go.
      if (rc >= 0 || (err != EAGAIN && err != EBUSY && err != ENOBUFS && err != EINTR)) break;
    }
  }
}

bool AfxdpPort::tx_ready() const {
  for (uint32_t k = 0; k < nqueues_; ++k) {
    const Queue& q = queues_[k];
    if (q.tx_free_count > 0) return true;
    if (__atomic_load_n(q.comp.producer, __ATOMIC_ACQUIRE) != q.comp.cached_cons) return true;  // frames to reclaim
  }
  return false;
}

PortStats AfxdpPort::stats() const {
  PortStats s = stats_;
  for (uint32_t k = 0; k < nqueues_; ++k) {
    xdp_statistics xs{};
    socklen_t len = sizeof(xs);
    // The kernel counts frames it could not deliver to us: no fill buffer or
    // too large for a chunk (rx_dropped), RX ring full, bad fill addresses.
    if (getsockopt(queues_[k].fd, SOL_XDP, XDP_STATISTICS, &xs, &len) == 0) {
      s.rx_dropped += xs.rx_dropped + xs.rx_ring_full + xs.rx_invalid_descs;
    }
  }
  return s;
}

}  // namespace

std::unique_ptr<Port> open_afxdp_port(const PortConfig& config, std::string* error) {
  auto port = std::make_unique<AfxdpPort>();
  if (!port->open(config, error)) return nullptr;
  return port;
}

}  // namespace metaroce::datapath
