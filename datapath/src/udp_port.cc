// UDP socket port: unprivileged, over ordinary kernel UDP sockets, like the
// public MetaRoCE software reference. The transport engine still sees
// Ethernet/IPv4/UDP frames, exactly as on AF_XDP:
//
// tx: tx_burst() decodes each frame (wire::decode_udp_frame), copies its UDP
//     payload into a preallocated transmit slot and queues it; flush() sends
//     the queue with sendmmsg(), one call per run of frames leaving from the
//     same socket, to flow.dst_ip:flow.dst_port, with the frame's DSCP/ECN as
//     a per-packet IP_TOS control message. The source port is the path's ECMP
//     entropy, so each distinct flow.src_port gets its own socket bound to
//     local_ip:src_port (the main socket when src_port == local_port). These
//     "entropy sockets" are opened lazily, the first time a source port is
//     seen: that one frame costs a socket()+bind()+epoll_ctl() (kernel-side
//     allocation; the userspace tables are preallocated at open). At most
//     kUdpMaxSourcePorts are opened; frames for further ports, or for a port
//     whose bind failed (e.g. in use by another process; not retried), leave
//     from the main socket: the path loses its entropy, not the frame, and
//     each such frame is counted (UdpPortInfo::tx_entropy_fallback). Sockets
//     are never closed while the port is open, so a long-running daemon with
//     many connections reaches the cap. The frame's MACs, IP TTL and source
//     IP are not used: the kernel sends from local_ip.
// rx: the main socket (local_ip:local_port), a listening socket per further
//     port in PortConfig::udp_ports (local_ip:4791 for RoCEv2, which peers
//     send to whatever the endpoint's own port; opened with the port, a bind
//     failure fails the open) and every entropy socket (peers may reply to a
//     path's source port) are read with recvmmsg() into
//     preallocated frame buffers, payload first at offset 42, then the
//     Ethernet/IPv4/UDP headers are written in front of it: real source and
//     destination IPs (IP_PKTINFO) and ports, the received DSCP/ECN
//     (IP_RECVTOS), TTL 64, and synthesised MACs 02:00:<the IPv4 address's
//     four bytes> for each side. Kernel socket drops (SO_RXQ_OVFL) are
//     reported as rx_dropped, datagrams larger than frame_size - 42 as
//     rx_truncated.
// wait_fd() is an epoll fd over all the sockets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "backends.h"
#include "metaroce/datapath/memory_port.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::datapath {
namespace {

constexpr size_t kTxBatch = 64;          // messages per sendmmsg call
constexpr int kSocketBufferBytes = 4 << 20;
constexpr int16_t kNoSocket = -1;        // source port not seen yet
constexpr int16_t kSocketFailed = -2;    // cap reached or bind failed: frames dropped
constexpr size_t kRxCmsgBytes = 128;     // IP_PKTINFO + IP_TOS + SO_RXQ_OVFL

std::string ip_text(uint32_t ip_host) {
  in_addr a{htonl(ip_host)};
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &a, buf, sizeof buf) ? buf : "?";
}

sockaddr_in make_addr(uint32_t ip_host, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(ip_host);
  sa.sin_port = htons(port);
  return sa;
}

wire::MacAddr synth_mac(uint32_t ip_host) {
  return {0x02, 0x00, static_cast<uint8_t>(ip_host >> 24), static_cast<uint8_t>(ip_host >> 16),
          static_cast<uint8_t>(ip_host >> 8), static_cast<uint8_t>(ip_host)};
}

// Creates a non-blocking UDP socket bound to ip:port with the receive options
// the rx path needs. Returns the fd, or -1 with *field and *error set.
int open_socket(uint32_t ip, uint16_t port, std::string* field, std::string* error) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *field = "local_port";
    *error = std::string("socket() failed: ") + std::strerror(errno);
    return -1;
  }
  const int one = 1;
  const int pmtu = IP_PMTUDISC_DO;  // the frames say DF: never fragment, EMSGSIZE instead
  if (setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one) != 0 ||
      setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one) != 0 ||
      setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu) != 0) {
    *field = "local_port";
    *error = std::string("setsockopt(IP_RECVTOS/IP_PKTINFO/IP_MTU_DISCOVER) failed: ") + std::strerror(errno);
    close(fd);
    return -1;
  }
  setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);  // best effort: drop counts
  // Larger buffers absorb bursts; FORCE works with CAP_NET_ADMIN, the plain
  // option is capped by net.core.[rw]mem_max otherwise. Best effort.
  const int bytes = kSocketBufferBytes;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  const sockaddr_in sa = make_addr(ip, port);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) {
    const int err = errno;
    *field = err == EADDRNOTAVAIL ? "local_ip" : "local_port";
    *error = "bind " + ip_text(ip) + ":" + std::to_string(port) + " failed: " + std::strerror(err);
    close(fd);
    return -1;
  }
  return fd;
}

uint16_t bound_port(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return 0;
  return ntohs(sa.sin_port);
}

class UdpPort final : public Port {
 public:
  UdpPort(const PortConfig& config, uint32_t local_ip)
      : name_(config.name.empty() ? "udp:" + config.local_ip : config.name),
        local_ip_(local_ip),
        frame_size_(config.frame_size),
        tx_capacity_(config.ring_size),
        rx_slots_(config.burst),
        port_to_socket_(new int16_t[65536]),
        tx_slots_(new TxSlot[config.ring_size]),
        tx_data_(new uint8_t[static_cast<size_t>(config.ring_size) * config.frame_size]),
        rx_data_(new uint8_t[static_cast<size_t>(config.burst) * config.frame_size]),
        rx_msgs_(new mmsghdr[config.burst]()),
        rx_iov_(new iovec[config.burst]()),
        rx_names_(new sockaddr_in[config.burst]()),
        rx_cmsg_(new RxCmsg[config.burst]()),
        events_(new epoll_event[kUdpMaxSourcePorts + 1 + config.udp_ports.size()]()) {
    std::fill_n(port_to_socket_.get(), 65536, kNoSocket);
    sockets_.reserve(kUdpMaxSourcePorts + 1 + config.udp_ports.size());
  }

  ~UdpPort() override {
    for (const auto& s : sockets_) close(s.fd);
    if (epoll_fd_ >= 0) close(epoll_fd_);
  }

  // Opens the epoll fd, the main socket and a listening socket per further
  // port in udp_ports. False with *error on failure.
  bool start(uint16_t local_port, const std::vector<uint16_t>& udp_ports, std::string* error) {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) {
      *error = std::string("kind: epoll_create1 failed: ") + std::strerror(errno);
      return false;
    }
    std::string field, why;
    const int fd = open_socket(local_ip_, local_port, &field, &why);
    if (fd < 0) {
      *error = field + ": " + why;
      return false;
    }
    local_port_ = bound_port(fd);
    if (!add_socket(fd, local_port_, &why)) {
      *error = "local_port: " + why;
      return false;
    }
    port_to_socket_[local_port_] = 0;
    for (uint16_t port : udp_ports) {
      if (port == 0 || port_to_socket_[port] != kNoSocket) continue;  // 0: none; local_port: the main socket
      const int extra = open_socket(local_ip_, port, &field, &why);
      if (extra < 0 || !add_socket(extra, port, &why)) {
        *error = std::string(kUdpPortsError) + why;
        return false;
      }
      port_to_socket_[port] = static_cast<int16_t>(sockets_.size() - 1);  // frames from this port leave from it
    }
    fixed_sockets_ = sockets_.size();
    return true;
  }

  const char* kind() const override { return "udp"; }
  const std::string& name() const override { return name_; }

  size_t rx_burst(std::span<RxFrame> out) override {
    const size_t want = std::min<size_t>(out.size(), rx_slots_);
    if (want == 0) return 0;
    size_t got = 0, used = 0;  // frames returned, buffers consumed (bad datagrams use one too)
    if (sockets_.size() == 1) {
      receive(0, want, &used, &got, out);
    } else {
      const int n = epoll_wait(epoll_fd_, events_.get(), static_cast<int>(sockets_.size()), 0);
      for (int i = 0; i < n && used < want; ++i) receive(events_[i].data.u32, want, &used, &got, out);
    }
    return got;
  }

  size_t tx_burst(std::span<const std::span<const uint8_t>> frames) override {
    size_t taken = 0;
    for (; taken < frames.size(); ++taken) {
      if (tx_head_ - tx_tail_ == tx_capacity_) {
        flush();  // make room once; a still-full queue is back-pressure
        if (tx_head_ - tx_tail_ == tx_capacity_) break;
      }
      const auto& f = frames[taken];
      if (f.size() > frame_size_) {
        ++info_.tx_oversize;
        continue;
      }
      const auto view = wire::decode_udp_frame(f);
      if (!view) {
        ++info_.tx_not_udp;
        continue;
      }
      int16_t sock = socket_for(view->flow.src_port);
      if (sock < 0) {
        ++info_.tx_entropy_fallback;
        sock = 0;  // the main socket
      }
      const uint64_t idx = tx_head_ % tx_capacity_;
      TxSlot& slot = tx_slots_[idx];
      slot.len = static_cast<uint32_t>(view->payload.size());
      slot.frame_len = static_cast<uint32_t>(f.size());
      slot.tos = static_cast<int>((view->dscp << 2) | static_cast<uint8_t>(view->ecn));
      slot.socket = static_cast<uint16_t>(sock);
      slot.dst = make_addr(view->flow.dst_ip, view->flow.dst_port);
      if (slot.len) std::memcpy(tx_data_.get() + idx * frame_size_, view->payload.data(), slot.len);
      ++tx_head_;
    }
    stats_.tx_ring_full += frames.size() - taken;
    return taken;
  }

  void flush() override {
    while (tx_tail_ < tx_head_) {
      // One run: consecutive queued frames leaving from the same socket.
      const uint16_t sock = tx_slots_[tx_tail_ % tx_capacity_].socket;
      size_t n = 0;
      for (uint64_t i = tx_tail_; i < tx_head_ && n < kTxBatch; ++i, ++n) {
        const uint64_t idx = i % tx_capacity_;
        TxSlot& slot = tx_slots_[idx];
        if (slot.socket != sock) break;
        tx_iov_[n] = {tx_data_.get() + idx * frame_size_, slot.len};
        msghdr& h = tx_msgs_[n].msg_hdr;
        h = msghdr{};
        h.msg_name = &slot.dst;
        h.msg_namelen = sizeof slot.dst;
        h.msg_iov = &tx_iov_[n];
        h.msg_iovlen = 1;
        h.msg_control = tx_cmsg_[n].buf;
        h.msg_controllen = CMSG_SPACE(sizeof(int));
        cmsghdr* c = CMSG_FIRSTHDR(&h);
        c->cmsg_level = IPPROTO_IP;
        c->cmsg_type = IP_TOS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &slot.tos, sizeof(int));
        tx_msgs_[n].msg_len = 0;
      }
      ++stats_.wakeups;
      const int sent = sendmmsg(sockets_[sock].fd, tx_msgs_, static_cast<unsigned>(n), MSG_DONTWAIT);
      if (sent > 0) {
        for (int i = 0; i < sent; ++i) {
          stats_.tx_bytes += tx_slots_[(tx_tail_ + i) % tx_capacity_].frame_len;
        }
        stats_.tx_frames += sent;
        tx_tail_ += sent;
        continue;  // a short count means the next one fails: the next call says why
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
        ++info_.tx_would_block;  // socket buffer full: keep the frames, try at the next flush
        return;
      }
      ++info_.tx_send_errors;  // this frame cannot be sent (EMSGSIZE, ENETUNREACH, ...): drop it
      ++tx_tail_;
    }
  }

  bool tx_ready() const override { return tx_head_ - tx_tail_ < tx_capacity_; }
  int wait_fd() const override { return epoll_fd_; }
  PortStats stats() const override { return stats_; }

  UdpPortInfo info() const {
    UdpPortInfo i = info_;
    i.local_port = local_port_;
    i.source_sockets = static_cast<uint32_t>(sockets_.size() - fixed_sockets_);
    return i;
  }

 private:
  struct Socket {
    int fd;
    uint16_t port;
    uint32_t rxq_ovfl;  // last SO_RXQ_OVFL value seen
  };
  struct TxSlot {
    uint32_t len = 0, frame_len = 0;
    int tos = 0;
    uint16_t socket = 0;
    sockaddr_in dst{};
  };
  struct alignas(cmsghdr) TxCmsg {
    char buf[CMSG_SPACE(sizeof(int))];
  };
  struct alignas(cmsghdr) RxCmsg {
    char buf[kRxCmsgBytes];
  };

  bool add_socket(int fd, uint16_t port, std::string* error) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(sockets_.size());
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      *error = std::string("epoll_ctl failed: ") + std::strerror(errno);
      close(fd);
      return false;
    }
    sockets_.push_back({fd, port, 0});  // capacity reserved at open: never reallocates
    return true;
  }

  // The socket index for a source port, opening it the first time it is seen.
  int16_t socket_for(uint16_t port) {
    const int16_t s = port_to_socket_[port];
    if (s != kNoSocket) return s;
    if (port == 0 || sockets_.size() >= fixed_sockets_ + kUdpMaxSourcePorts) return port_to_socket_[port] = kSocketFailed;
    std::string field, why;
    const int fd = open_socket(local_ip_, port, &field, &why);
    if (fd < 0 || !add_socket(fd, port, &why)) return port_to_socket_[port] = kSocketFailed;
    return port_to_socket_[port] = static_cast<int16_t>(sockets_.size() - 1);
  }

  // Reads up to want - *used datagrams from socket k into rx buffers *used...,
  // rebuilding their Ethernet/IPv4/UDP headers.
  void receive(uint32_t k, size_t want, size_t* used, size_t* got, std::span<RxFrame> out) {
    const size_t first = *used, count = want - *used;
    const size_t room = frame_size_ - wire::kUdpFrameHeaderBytes;
    for (size_t i = first; i < first + count; ++i) {
      rx_iov_[i] = {rx_data_.get() + i * frame_size_ + wire::kUdpFrameHeaderBytes, room};
      msghdr& h = rx_msgs_[i].msg_hdr;
      h.msg_name = &rx_names_[i];
      h.msg_namelen = sizeof(sockaddr_in);
      h.msg_iov = &rx_iov_[i];
      h.msg_iovlen = 1;
      h.msg_control = rx_cmsg_[i].buf;
      h.msg_controllen = kRxCmsgBytes;
      h.msg_flags = 0;
    }
    Socket& sock = sockets_[k];
    int n;
    do {
      n = recvmmsg(sock.fd, &rx_msgs_[first], static_cast<unsigned>(count), MSG_DONTWAIT, nullptr);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return;
    *used += n;
    for (size_t i = first; i < first + static_cast<size_t>(n); ++i) {
      msghdr& h = rx_msgs_[i].msg_hdr;
      bool have_dst = false;
      uint32_t dst_ip = 0;
      uint8_t tos = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
          in_pktinfo pi;
          std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
          dst_ip = ntohl(pi.ipi_addr.s_addr);
          have_dst = true;
        } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
          std::memcpy(&tos, CMSG_DATA(c), 1);
        } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
          uint32_t drops;
          std::memcpy(&drops, CMSG_DATA(c), sizeof drops);
          stats_.rx_dropped += drops - sock.rxq_ovfl;
          sock.rxq_ovfl = drops;
        }
      }
      if (h.msg_flags & MSG_TRUNC) {
        ++stats_.rx_truncated;
        continue;
      }
      if (!have_dst || h.msg_namelen != sizeof(sockaddr_in) || rx_names_[i].sin_family != AF_INET) {
        ++info_.rx_not_ipv4;
        continue;
      }
      const size_t len = rx_msgs_[i].msg_len;
      wire::UdpFlow flow;
      flow.src_ip = ntohl(rx_names_[i].sin_addr.s_addr);
      flow.src_port = ntohs(rx_names_[i].sin_port);
      flow.dst_ip = dst_ip;
      flow.dst_port = sock.port;
      flow.src_mac = synth_mac(flow.src_ip);
      flow.dst_mac = synth_mac(flow.dst_ip);
      uint8_t* frame = rx_data_.get() + i * frame_size_;
      const size_t hdr = wire::encode_udp_headers({frame, frame_size_}, flow, static_cast<wire::Ecn>(tos & 3),
                                                  static_cast<uint8_t>(tos >> 2), len);
      if (hdr == 0) {
        ++stats_.rx_truncated;
        continue;
      }
      out[*got] = {frame, static_cast<uint32_t>(hdr + len)};
      ++*got;
      ++stats_.rx_frames;
      stats_.rx_bytes += hdr + len;
    }
  }

  const std::string name_;
  const uint32_t local_ip_;
  const uint32_t frame_size_;
  const uint64_t tx_capacity_;
  const uint32_t rx_slots_;
  uint16_t local_port_ = 0;
  int epoll_fd_ = -1;
  std::vector<Socket> sockets_;  // [0] = main socket, then the udp_ports' listening sockets, then entropy sockets
  size_t fixed_sockets_ = 1;     // the main and listening sockets: not entropy sockets, not capped
  std::unique_ptr<int16_t[]> port_to_socket_;
  // tx queue: a ring of ring_size slots, payloads in tx_data_
  std::unique_ptr<TxSlot[]> tx_slots_;
  std::unique_ptr<uint8_t[]> tx_data_;
  uint64_t tx_head_ = 0, tx_tail_ = 0;
  mmsghdr tx_msgs_[kTxBatch]{};
  iovec tx_iov_[kTxBatch]{};
  TxCmsg tx_cmsg_[kTxBatch]{};
  // rx buffers: burst frames of frame_size bytes, valid until the next rx_burst
  std::unique_ptr<uint8_t[]> rx_data_;
  std::unique_ptr<mmsghdr[]> rx_msgs_;
  std::unique_ptr<iovec[]> rx_iov_;
  std::unique_ptr<sockaddr_in[]> rx_names_;
  std::unique_ptr<RxCmsg[]> rx_cmsg_;
  std::unique_ptr<epoll_event[]> events_;
  PortStats stats_;
  UdpPortInfo info_;
};

}  // namespace

std::unique_ptr<Port> open_udp_port(const PortConfig& config, std::string* error) {
  if (config.local_ip.empty()) {
    *error = "local_ip: required for kind 'udp' (the IPv4 address to bind, e.g. 127.0.0.1)";
    return nullptr;
  }
  const auto ip = wire::parse_ipv4(config.local_ip.c_str());
  if (!ip) {
    *error = "local_ip: not an IPv4 address '" + config.local_ip + "'";
    return nullptr;
  }
  if (std::string e = software_ring_size_error(config.ring_size); !e.empty()) {
    *error = e;
    return nullptr;
  }
  if (config.frame_size <= wire::kUdpFrameHeaderBytes) {
    *error = "frame_size: must be larger than the " + std::to_string(wire::kUdpFrameHeaderBytes) +
             " B Ethernet/IPv4/UDP headers (got " + std::to_string(config.frame_size) + ")";
    return nullptr;
  }
  if (config.burst == 0) {
    *error = "burst: must be at least 1";
    return nullptr;
  }
  auto port = std::make_unique<UdpPort>(config, *ip);
  if (!port->start(config.local_port, config.udp_ports, error)) return nullptr;
  return port;
}

std::optional<UdpPortInfo> udp_port_info(const Port& port) {
  const auto* u = dynamic_cast<const UdpPort*>(&port);
  if (!u) return std::nullopt;
  return u->info();
}

}  // namespace metaroce::datapath
