// DPDK port: one rx and one tx queue of a DPDK ethdev behind the per-burst
// Port interface (port.h). The process-wide EAL lives in eal.cc; this file
// has the per-port set-up (open/close) first and the per-burst datapath last.
//
// Which ethdev: PortConfig::dpdk_device names it.
//   - A port that already exists: a vdev created by `--vdev=...` in eal_args
//     (e.g. "net_af_packet0"), a PCI device probed at EAL init, or one made by
//     the application (rte_eth_from_rings names it "net_ring_<name>").
//   - Otherwise it is hot-plugged with rte_dev_probe(): dpdk_device may carry
//     the devargs itself ("net_af_packet1,iface=veth0,qpairs=1"), or a bare
//     vdev name gets ",iface=<PortConfig::ifname>" appended when ifname is set.
//     A PCI address not probed yet is probed the same way.
//   Kernel-backed vdevs (net_af_packet, net_af_xdp, net_tap) bind their
//   sockets in the network namespace of the thread that creates the vdev (the
//   thread calling rte_eal_init for --vdev, or open_port for hot-plug), and
//   net_af_packet also runs its control ioctls (promiscuous mode) by interface
//   name in the namespace of the thread calling open_port: open the port from
//   the interface's namespace.
// Closing the port stops and closes the ethdev and, when no other ethdev
// shares its device, removes the device (rte_dev_remove), so the same name can
// be hot-plugged again later; a --vdev device can therefore be reopened only
// with hot-plug arguments (ifname or devargs in dpdk_device).
//
// Ownership: a Port owns the whole ethdev (one open Port per ethdev). It
// configures queue+1 rx/tx queues and polls only PortConfig::queue. The MTU is
// left as the device has it (for net_af_packet it is the kernel interface's).
//
// Buffers: one mbuf pool per port, sized for every descriptor of the device
// rings plus the frames held between two rx_burst() calls and one tx burst.
// rx_burst() hands out pointers into mbuf data, single-segment frames only
// (multi-segment or larger than frame_size: counted as rx_truncated and
// dropped). tx_burst() copies into freshly allocated mbufs; frames the device
// does not take are freed and counted in tx_ring_full. Frames longer than
// frame_size (or empty) end the accepted prefix without being counted.
// flush() issues an empty tx burst, which lets kernel-ring PMDs (net_af_xdp)
// kick the kernel for frames queued earlier. tx_ready() is false when the
// pool is empty or the driver reports the next tx descriptor still in use.
// wait_fd() is -1 (vdevs here have no rx interrupts); wakeups stays 0.
//
// net_af_xdp: the pool is its UMEM, so frame_size must leave each mbuf within
// a page (frame_size <= ~3.7 KiB with 4 KiB pages; refused with the limit
// otherwise), the pool is packed into one chunk, and it gets 2 x 2048 extra
// mbufs for the PMD's fixed fill and completion rings.
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "metaroce/datapath/dpdk_device_name.h"
#include "backends.h"
#include "dpdk/eal.h"

namespace metaroce::datapath {
namespace {

// DPDK's device hot-plug and ethdev setup are not thread-safe (the devargs
// list and bus scan have no lock): two threads opening ports at once, as two
// endpoints in one process do, made one probe fail with "Cannot find device".
// Opening and closing ports is control plane; it takes this lock. Recursive:
// a failed open tears down under it.
std::recursive_mutex& device_mutex() {
  static std::recursive_mutex m;
  return m;
}

constexpr size_t kMaxBurst = 256;    // open_port() bounds PortConfig::burst to this
constexpr uint32_t kPoolSlack = 64;  // mbufs beyond the worst case computed below
constexpr uint32_t kMinRing = 32, kMaxRing = 16384;
constexpr uint32_t kAfXdpRingDescs = 2048;  // net_af_xdp's fixed ring size (XSK_RING_*__DEFAULT_NUM_DESCS)

std::string errno_text(int err) { return rte_strerror(err < 0 ? -err : err); }

std::string available_ports() {
  std::string list;
  uint16_t pid;
  RTE_ETH_FOREACH_DEV(pid) {
    char name[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(pid, name) == 0) list += (list.empty() ? "" : ", ") + std::string(name);
  }
  return list.empty() ? "none" : list;
}

// Stops, closes and (when no sibling ethdev shares the device) removes the
// ethdev, then frees the pool unless mbufs of it are still out somewhere else
// (e.g. queued in a net_ring peer): then the pool is kept, so nothing dangles.
// `device_private_pool`: only this device could hold the pool's mbufs (the
// net_af_xdp UMEM, whose fill-ring mbufs the PMD never returns; its socket and
// UMEM are gone after close), so the pool is freed regardless.
void teardown(uint16_t port_id, rte_mempool* pool, const std::string& name, bool device_private_pool) {
  std::lock_guard lock(device_mutex());
  rte_eth_dev_stop(port_id);  // no-op when not started
  rte_device* device = nullptr;
  rte_eth_dev_info info;
  if (rte_eth_dev_info_get(port_id, &info) == 0) device = info.device;
  rte_eth_dev_close(port_id);
  if (device) {
    bool siblings = false;
    uint16_t other;
    RTE_ETH_FOREACH_DEV_OF(other, device) siblings = true;
    if (!siblings) rte_dev_remove(device);
  }
  if (!pool) return;
  const unsigned out = rte_mempool_in_use_count(pool);
  if (out == 0 || device_private_pool) {
    rte_mempool_free(pool);
  } else {
    std::fprintf(stderr, "metaroce: dpdk port '%s': %u mbufs still in flight after close; pool %s kept\n", name.c_str(),
                 out, pool->name);
  }
}

class DpdkPort final : public Port {
 public:
  DpdkPort(std::string name, uint16_t port_id, uint16_t queue, uint32_t frame_size, rte_mempool* pool,
           bool device_private_pool)
      : name_(std::move(name)),
        port_id_(port_id),
        queue_(queue),
        frame_size_(frame_size),
        pool_(pool),
        device_private_pool_(device_private_pool) {}

  ~DpdkPort() override {
    if (rx_held_count_) rte_pktmbuf_free_bulk(rx_held_.data(), rx_held_count_);
    rx_held_count_ = 0;
    teardown(port_id_, pool_, name_, device_private_pool_);
    dpdk::release_ethdev(port_id_);
  }

  const char* kind() const override { return "dpdk"; }
  const std::string& name() const override { return name_; }
  size_t rx_burst(std::span<RxFrame> out) override;
  size_t tx_burst(std::span<const std::span<const uint8_t>> frames) override;
  void flush() override;
  bool tx_ready() const override;
  PortStats stats() const override;

 private:
  const std::string name_;
  const uint16_t port_id_;
  const uint16_t queue_;
  const uint32_t frame_size_;
  rte_mempool* const pool_;
  const bool device_private_pool_;
  std::array<rte_mbuf*, kMaxBurst> rx_held_{};  // frames handed out by the last rx_burst
  uint16_t rx_held_count_ = 0;
  std::array<rte_mbuf*, kMaxBurst> tx_scratch_{};
  static constexpr uint32_t kIdleFlushEvery = 64;
  bool tx_since_flush_ = false;  // frames handed to the PMD since the last flush
  uint32_t idle_flushes_ = 0;
  PortStats stats_;
};

// ---------------------------------------------------------------------------
// Set-up (control plane)

// An mbuf pool without a per-lcore cache (the datapath thread need not be
// an EAL thread). `packed`: objects back to back, allowed to straddle pages
// (no IOVA-contiguity padding, no channel spreading), as net_af_xdp's UMEM
// needs; only for drivers whose device never DMAs by physical address.
rte_mempool* create_pool(const std::string& name, uint32_t n, uint16_t room, int socket, bool packed) {
  if (!packed) return rte_pktmbuf_pool_create(name.c_str(), n, 0, 0, room, socket);
  rte_pktmbuf_pool_private priv;
  std::memset(&priv, 0, sizeof(priv));
  priv.mbuf_data_room_size = room;
  rte_mempool* mp =
      rte_mempool_create_empty(name.c_str(), n, static_cast<unsigned>(sizeof(rte_mbuf)) + room, 0, sizeof(priv), socket,
                               RTE_MEMPOOL_F_NO_SPREAD | RTE_MEMPOOL_F_NO_IOVA_CONTIG);
  if (!mp) return nullptr;
  int rc = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), nullptr);
  if (rc == 0) {
    rte_pktmbuf_pool_init(mp, &priv);
    rc = rte_mempool_populate_default(mp);
  }
  if (rc < 0) {
    rte_mempool_free(mp);
    rte_errno = -rc;
    return nullptr;
  }
  rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
  return mp;
}

// Finds the ethdev for config.dpdk_device, hot-plugging it when it does not exist yet.
bool resolve_port(const PortConfig& config, uint16_t* port_id, std::string* error) {
  const std::string& spec = config.dpdk_device;
  const size_t comma = spec.find(',');
  const std::string name = spec.substr(0, comma);
  if (rte_eth_dev_get_port_by_name(name.c_str(), port_id) == 0) return true;

  std::string devargs = spec;
  if (comma == std::string::npos && !config.ifname.empty() && is_dpdk_vdev(spec)) devargs += ",iface=" + config.ifname;
  const std::string before = available_ports();
  const int rc = rte_dev_probe(devargs.c_str());
  if (rc < 0) {
    *error = "dpdk_device: no DPDK port named '" + name + "' (available: " + before + ") and hot-plugging '" + devargs +
             "' failed: " + errno_text(rc) +
             (rc == -EEXIST ? " (the device exists without a port: closed earlier in this process?)" : "");
    return false;
  }
  if (rte_eth_dev_get_port_by_name(name.c_str(), port_id) == 0) return true;
  *error = "dpdk_device: hot-plugging '" + devargs + "' created no port named '" + name +
           "' (available: " + available_ports() + ")";
  return false;
}

}  // namespace

std::unique_ptr<Port> open_dpdk_port(const PortConfig& config, std::string* error) {
  if (config.dpdk_device.empty() || config.dpdk_device[0] == ',') {
    *error =
        "dpdk_device: required for kind 'dpdk' (a port name such as 'net_af_packet0', "
        "devargs such as 'net_af_packet1,iface=veth0', or a PCI address)";
    return nullptr;
  }
  if (config.ring_size < kMinRing || config.ring_size > kMaxRing) {
    *error = "ring_size: must be in [" + std::to_string(kMinRing) + ", " + std::to_string(kMaxRing) + "] (got " +
             std::to_string(config.ring_size) + ")";
    return nullptr;
  }
  if (config.queue >= RTE_MAX_QUEUES_PER_PORT) {
    *error = "queue: must be below " + std::to_string(RTE_MAX_QUEUES_PER_PORT) + " (got " +
             std::to_string(config.queue) + ")";
    return nullptr;
  }
  if (!dpdk::ensure_eal(config.eal_args, error)) return nullptr;

  std::lock_guard lock(device_mutex());
  uint16_t port_id = 0;
  if (!resolve_port(config, &port_id, error)) return nullptr;
  const std::string port_name =
      config.name.empty() ? config.dpdk_device.substr(0, config.dpdk_device.find(',')) : config.name;
  const std::string dev = "'" + config.dpdk_device.substr(0, config.dpdk_device.find(',')) + "'";
  std::string owner;
  if (!dpdk::claim_ethdev(port_id, port_name, &owner)) {
    *error = "dpdk_device: " + dev + " is already open (port '" + owner + "')";
    return nullptr;
  }
  rte_eth_dev_info info;
  const int info_rc = rte_eth_dev_info_get(port_id, &info);
  const uint16_t queues = static_cast<uint16_t>(config.queue + 1);
  if (info_rc != 0 || queues > info.max_rx_queues || queues > info.max_tx_queues) {
    dpdk::release_ethdev(port_id);
    *error = info_rc != 0 ? "dpdk_device: cannot query " + dev + ": " + errno_text(info_rc)
                          : "queue: " + dev + " has " + std::to_string(info.max_rx_queues) + " rx / " +
                                std::to_string(info.max_tx_queues) + " tx queues (got queue " +
                                std::to_string(config.queue) + ")";
    return nullptr;
  }

  const bool af_xdp = info.driver_name && std::strcmp(info.driver_name, "net_af_xdp") == 0;

  // From here on the device is being reconfigured: every failure tears it
  // down like a close would, so no queue is left pointing at a freed pool.
  rte_mempool* pool = nullptr;
  auto fail = [&](std::string message) -> std::unique_ptr<Port> {
    teardown(port_id, pool, port_name, af_xdp);
    dpdk::release_ethdev(port_id);
    *error = std::move(message);
    return nullptr;
  };

  rte_eth_conf conf;
  std::memset(&conf, 0, sizeof(conf));
  if (int rc = rte_eth_dev_configure(port_id, queues, queues, &conf); rc != 0)
    return fail("dpdk_device: cannot configure " + dev + ": " + errno_text(rc));
  uint16_t rx_desc = static_cast<uint16_t>(config.ring_size), tx_desc = static_cast<uint16_t>(config.ring_size);
  if (int rc = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &rx_desc, &tx_desc); rc != 0)
    return fail("ring_size: " + dev + " refuses " + std::to_string(config.ring_size) +
                " descriptors: " + errno_text(rc));

  // Every rx descriptor of every configured queue, one tx ring, the frames
  // held between rx bursts and one tx burst in flight. net_af_xdp ignores the
  // descriptor counts: its fill and tx/completion rings have kAfXdpRingDescs
  // entries each, every one an mbuf of this pool (its UMEM).
  const uint32_t mbufs =
      queues * uint32_t{rx_desc} + tx_desc + 2 * kMaxBurst + kPoolSlack + (af_xdp ? 2 * queues * kAfXdpRingDescs : 0);
  const uint32_t room =
      std::max({config.frame_size, uint32_t{RTE_MBUF_DEFAULT_DATAROOM}, info.min_rx_bufsize}) + RTE_PKTMBUF_HEADROOM;
  // net_af_xdp registers the pool's memory as its UMEM, one mbuf per chunk:
  // the kernel refuses chunks larger than a page (without hugepages), and
  // DPDK 22.11's PMD assumes objects tile the first memory chunk with no gaps,
  // so that pool is packed (see create_pool) and must be a single chunk.
  const long page = sysconf(_SC_PAGESIZE);
  const uint32_t obj =
      rte_mempool_calc_obj_size(static_cast<uint32_t>(sizeof(rte_mbuf)) + room, RTE_MEMPOOL_F_NO_SPREAD, nullptr);
  if (af_xdp && page > 0 && obj > page) {
    const long max_frame = page - static_cast<long>(obj - config.frame_size);
    return fail("frame_size: net_af_xdp needs each mbuf within a " + std::to_string(page) +
                "-byte page, so frame_size <= " + std::to_string(max_frame) + " for " + dev + " (got " +
                std::to_string(config.frame_size) + ")");
  }
  const int socket = rte_eth_dev_socket_id(port_id);
  const std::string pool_name = "mr" + std::to_string(port_id) + "_" + std::to_string(dpdk::next_object_id());
  pool = create_pool(pool_name, mbufs, static_cast<uint16_t>(room), socket < 0 ? SOCKET_ID_ANY : socket, af_xdp);
  if (!pool)
    return fail("ring_size: cannot allocate " + std::to_string(mbufs) + " mbufs of " + std::to_string(room) +
                " bytes for " + dev + ": " + errno_text(rte_errno) + " (raise -m in eal_args, or lower ring_size)");
  if (af_xdp && pool->nb_mem_chunks != 1)
    return fail("ring_size: net_af_xdp needs its mbuf pool in one contiguous memory chunk, got " +
                std::to_string(pool->nb_mem_chunks) + " for " + dev + " (lower ring_size)");

  for (uint16_t q = 0; q < queues; ++q) {
    if (int rc = rte_eth_rx_queue_setup(port_id, q, rx_desc, static_cast<unsigned>(socket < 0 ? SOCKET_ID_ANY : socket),
                                        nullptr, pool);
        rc != 0)
      return fail("dpdk_device: cannot set up rx queue " + std::to_string(q) + " of " + dev + ": " + errno_text(rc));
    if (int rc = rte_eth_tx_queue_setup(port_id, q, tx_desc, static_cast<unsigned>(socket < 0 ? SOCKET_ID_ANY : socket),
                                        nullptr);
        rc != 0)
      return fail("dpdk_device: cannot set up tx queue " + std::to_string(q) + " of " + dev + ": " + errno_text(rc));
  }
  if (int rc = rte_eth_dev_start(port_id); rc != 0)
    return fail("dpdk_device: cannot start " + dev + ": " + errno_text(rc));
  if (int rc = rte_eth_promiscuous_enable(port_id); rc != 0 && rc != -ENOTSUP)
    return fail("dpdk_device: cannot enable promiscuous mode on " + dev + ": " + errno_text(rc) +
                " (kernel-backed vdevs: open the port from the interface's network namespace)");

  return std::make_unique<DpdkPort>(port_name, port_id, static_cast<uint16_t>(config.queue), config.frame_size, pool,
                                    af_xdp);
}

// ---------------------------------------------------------------------------
// Datapath (per burst; no allocation, no locks)

size_t DpdkPort::rx_burst(std::span<RxFrame> out) {
  if (rx_held_count_) {
    rte_pktmbuf_free_bulk(rx_held_.data(), rx_held_count_);
    rx_held_count_ = 0;
  }
  const auto want = static_cast<uint16_t>(std::min(out.size(), kMaxBurst));
  if (want == 0) return 0;
  const uint16_t got = rte_eth_rx_burst(port_id_, queue_, rx_held_.data(), want);
  uint16_t kept = 0;
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < got; ++i) {
    rte_mbuf* m = rx_held_[i];
    if (m->nb_segs != 1 || m->pkt_len > frame_size_) {
      ++stats_.rx_truncated;
      rte_pktmbuf_free(m);
      continue;
    }
    out[kept] = RxFrame{rte_pktmbuf_mtod(m, const uint8_t*), m->data_len};
    rx_held_[kept++] = m;
    bytes += m->data_len;
  }
  rx_held_count_ = kept;
  stats_.rx_frames += kept;
  stats_.rx_bytes += bytes;
  return kept;
}

size_t DpdkPort::tx_burst(std::span<const std::span<const uint8_t>> frames) {
  size_t accepted = 0;
  uint64_t bytes = 0;
  bool bad_frame = false;  // stopped at an empty or oversized frame, not by back-pressure
  while (accepted < frames.size()) {
    // The next chunk: up to kMaxBurst frames that fit an mbuf, no more than the pool holds.
    const size_t limit = std::min(frames.size() - accepted, kMaxBurst);
    size_t fit = 0;
    while (fit < limit && !frames[accepted + fit].empty() && frames[accepted + fit].size() <= frame_size_) ++fit;
    if (fit == 0) {
      bad_frame = true;
      break;
    }
    const size_t chunk = std::min<size_t>(fit, rte_mempool_avail_count(pool_));
    if (chunk == 0 || rte_pktmbuf_alloc_bulk(pool_, tx_scratch_.data(), static_cast<unsigned>(chunk)) != 0) break;
    for (size_t i = 0; i < chunk; ++i) {
      const auto& f = frames[accepted + i];
      rte_mbuf* m = tx_scratch_[i];
      std::memcpy(rte_pktmbuf_mtod(m, uint8_t*), f.data(), f.size());
      m->data_len = static_cast<uint16_t>(f.size());
      m->pkt_len = static_cast<uint32_t>(f.size());
    }
    const uint16_t sent = rte_eth_tx_burst(port_id_, queue_, tx_scratch_.data(), static_cast<uint16_t>(chunk));
    if (sent < chunk) rte_pktmbuf_free_bulk(tx_scratch_.data() + sent, static_cast<unsigned>(chunk - sent));
    for (uint16_t i = 0; i < sent; ++i) bytes += frames[accepted + i].size();
    accepted += sent;
    if (sent < chunk) break;
  }
  if (!bad_frame) stats_.tx_ring_full += frames.size() - accepted;
  stats_.tx_frames += accepted;
  stats_.tx_bytes += bytes;
  if (accepted > 0) tx_since_flush_ = true;
  return accepted;
}

// Most PMDs hand frames to the device inside rte_eth_tx_burst(). Those that
// work through a kernel ring (net_af_xdp) kick the kernel there too, but only
// for the frames of that call; an empty burst lets them kick (when the kernel
// asks for a wakeup) and reap completions for frames queued earlier.
// The worker flushes every port every iteration, sent or not (worker.cc):
// after a burst the empty burst goes at once; when idle only every
// kIdleFlushEvery calls, so a ring left unkicked is still kicked but an idle
// loop does not make a syscall per iteration.
void DpdkPort::flush() {
  if (!tx_since_flush_ && ++idle_flushes_ < kIdleFlushEvery) return;
  tx_since_flush_ = false;
  idle_flushes_ = 0;
  rte_eth_tx_burst(port_id_, queue_, tx_scratch_.data(), 0);
}

bool DpdkPort::tx_ready() const {
  if (rte_mempool_avail_count(pool_) == 0) return false;
  // Drivers that report descriptor state: the slot the next frame goes to must be free.
  return rte_eth_tx_descriptor_status(port_id_, queue_, 0) != RTE_ETH_TX_DESC_FULL;
}

PortStats DpdkPort::stats() const {
  PortStats s = stats_;
  rte_eth_stats dev;
  if (rte_eth_stats_get(port_id_, &dev) == 0) s.rx_dropped = dev.imissed + dev.rx_nombuf;
  return s;
}

}  // namespace metaroce::datapath
