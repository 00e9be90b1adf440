#include "xdp_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "xdp_object.h"

namespace metaroce::datapath::afxdp {
namespace {

// Layout of mr_config's value in metaroce_xdp.bpf.c.
struct ConfigValue {
  uint32_t bridge = 0;
  uint32_t owner_pid = 0;
  uint64_t owner_start = 0;
};
static_assert(sizeof(ConfigValue) == 16, "must match struct mr_config_value in metaroce_xdp.bpf.c");

constexpr const char* kXsksMap = "mr_xsks";
constexpr const char* kPortsMap = "mr_ports";
constexpr const char* kConfigMap = "mr_config";

std::string errno_text(int err) { return std::strerror(err < 0 ? -err : err); }

// Start time of a process in clock ticks since boot (/proc/<pid>/stat field
// 22); 0 when the process does not exist. Together with the pid it names one
// process even after the pid is reused.
uint64_t process_start_time(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return 0;
  const size_t paren = line.rfind(')');  // comm may contain spaces and ')'
  if (paren == std::string::npos) return 0;
  std::istringstream fields(line.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The owner recorded in a loaded program's mr_config map, if it has one.
bool read_owner(int prog_fd, ConfigValue* owner) {
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0 || info.nr_map_ids == 0) return false;
  std::vector<uint32_t> map_ids(info.nr_map_ids);
  const uint32_t nr_map_ids = info.nr_map_ids;
  info = bpf_prog_info{};
  info.nr_map_ids = nr_map_ids;
  info.map_ids = reinterpret_cast<uint64_t>(map_ids.data());
  len = sizeof(info);
  if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0) return false;
  for (uint32_t i = 0; i < std::min(nr_map_ids, info.nr_map_ids); ++i) {
    Fd map(bpf_map_get_fd_by_id(map_ids[i]));
    if (map.get() < 0) continue;
    bpf_map_info minfo{};
    uint32_t mlen = sizeof(minfo);
    if (bpf_obj_get_info_by_fd(map.get(), &minfo, &mlen) != 0) continue;
    if (std::strcmp(minfo.name, kConfigMap) != 0 || minfo.value_size != sizeof(ConfigValue)) continue;
    const uint32_t key = 0;
    return bpf_map_lookup_elem(map.get(), &key, owner) == 0;
  }
  return false;
}

class NetnsFd {
 public:
  static int open_current() { return open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC); }
  static bool same(int a, int b) {
    struct stat sa {}, sb {};
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
};

}  // namespace

std::unique_ptr<XdpProgram> XdpProgram::load(bool bridge_mode, std::span<const uint16_t> udp_ports,
                                             std::string* error) {
  std::unique_ptr<XdpProgram> p(new XdpProgram());
  bpf_object_open_opts open_opts{};
  open_opts.sz = sizeof(open_opts);
  open_opts.object_name = kProgramName;
  p->obj_ = bpf_object__open_mem(kXdpObject, kXdpObjectSize, &open_opts);
  if (!p->obj_) {
    *error = "afxdp: cannot open the embedded XDP object: " + errno_text(errno);
    return nullptr;
  }
  if (const int err = bpf_object__load(p->obj_); err != 0) {
    *error = "afxdp: cannot load XDP program: " + errno_text(err) + " (need CAP_NET_ADMIN + CAP_BPF)";
    return nullptr;
  }
  bpf_program* prog = bpf_object__find_program_by_name(p->obj_, kProgramName);
  p->prog_fd_ = prog ? bpf_program__fd(prog) : -1;
  p->xsks_map_fd_ = bpf_object__find_map_fd_by_name(p->obj_, kXsksMap);
  const int ports_fd = bpf_object__find_map_fd_by_name(p->obj_, kPortsMap);
  const int config_fd = bpf_object__find_map_fd_by_name(p->obj_, kConfigMap);
  if (p->prog_fd_ < 0 || p->xsks_map_fd_ < 0 || ports_fd < 0 || config_fd < 0) {
    *error = "afxdp: the embedded XDP object lacks program or maps (build mismatch)";
    return nullptr;
  }
  const uint8_t one = 1;
  for (const uint16_t port : udp_ports) {
    if (const int err = bpf_map_update_elem(ports_fd, &port, &one, BPF_ANY); err != 0) {
      *error = "udp_ports: cannot add port " + std::to_string(port) + " to the XDP filter: " + errno_text(err);
      return nullptr;
    }
  }
  ConfigValue config;
  config.bridge = bridge_mode ? 1 : 0;
  config.owner_pid = static_cast<uint32_t>(getpid());
  config.owner_start = process_start_time(config.owner_pid);
  const uint32_t key = 0;
  if (const int err = bpf_map_update_elem(config_fd, &key, &config, BPF_ANY); err != 0) {
    *error = "afxdp: cannot configure the XDP program: " + errno_text(err);
    return nullptr;
  }
  return p;
}

bool XdpProgram::clear_stale(int ifindex, const std::string& ifname, std::string* error) {
  bpf_xdp_query_opts query{};
  query.sz = sizeof(query);
  if (const int err = bpf_xdp_query(ifindex, 0, &query); err != 0) {
    *error = "afxdp: cannot query XDP programs on '" + ifname + "': " + errno_text(err) + " (need CAP_NET_ADMIN)";
    return false;
  }
  const struct {
    uint32_t id;
    uint32_t flags;
    const char* mode;
  } slots[] = {{query.drv_prog_id, XDP_FLAGS_DRV_MODE, "native"},
               {query.skb_prog_id, XDP_FLAGS_SKB_MODE, "skb"},
               {query.hw_prog_id, XDP_FLAGS_HW_MODE, "offload"}};
  for (const auto& slot : slots) {
    if (slot.id == 0) continue;
    Fd prog(bpf_prog_get_fd_by_id(slot.id));
    if (prog.get() < 0) {
      if (errno == ENOENT) continue;  // detached meanwhile
      *error = "afxdp: cannot inspect XDP program id " + std::to_string(slot.id) + " on '" + ifname +
               "': " + errno_text(errno) + " (need CAP_BPF or CAP_SYS_ADMIN)";
      return false;
    }
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (const int err = bpf_obj_get_info_by_fd(prog.get(), &info, &len); err != 0) {
      *error = "afxdp: cannot inspect XDP program id " + std::to_string(slot.id) + ": " + errno_text(err);
      return false;
    }
    const std::string name(info.name, strnlen(info.name, sizeof(info.name)));
    if (name != kProgramName) {
      *error = "ifname: '" + ifname + "' already has XDP program '" + name + "' (id " + std::to_string(slot.id) +
               ", " + slot.mode + " mode) attached; it is not ours and is left alone (remove it with `ip link set dev " +
               ifname + " xdp off`)";
      return false;
    }
    ConfigValue owner;
    if (read_owner(prog.get(), &owner) && owner.owner_pid != 0 && owner.owner_start != 0 &&
        process_start_time(owner.owner_pid) == owner.owner_start) {
      *error = "ifname: '" + ifname + "' is in use by another metaroce AF_XDP port (process " +
               std::to_string(owner.owner_pid) + (owner.owner_pid == static_cast<uint32_t>(getpid()) ? ", this one" : "") +
               "); use PortConfig::queues to serve several queues from one port";
      return false;
    }
    // Ours, and its owner is gone: a leftover of a crashed run.
    bpf_xdp_attach_opts opts{};
    opts.sz = sizeof(opts);
    opts.old_prog_fd = prog.get();  // detach exactly this program, nothing that replaced it
    if (const int err = bpf_xdp_detach(ifindex, slot.flags, &opts); err != 0) {
      *error = "afxdp: cannot detach stale XDP program (id " + std::to_string(slot.id) + ") from '" + ifname +
               "': " + errno_text(err);
      return false;
    }
  }
  return true;
}

XdpProgram::~XdpProgram() {
  detach();
  if (obj_) bpf_object__close(obj_);
}

bool XdpProgram::attach(int ifindex, const std::string& ifname, const std::string& mode, std::string* error) {
  const bool try_native = mode == "native" || mode == "auto";
  const bool try_skb = mode == "skb" || mode == "auto";
  int err = 0;
  std::string native_failure;
  for (const uint32_t flags : {uint32_t{XDP_FLAGS_DRV_MODE}, uint32_t{XDP_FLAGS_SKB_MODE}}) {
    if ((flags == XDP_FLAGS_DRV_MODE && !try_native) || (flags == XDP_FLAGS_SKB_MODE && !try_skb)) continue;
    // In auto mode a native failure is expected on some drivers (and kept in
    // our error if skb fails too): keep libbpf from printing it meanwhile.
    // libbpf's print hook is process-global; open/close are control plane.
    const bool quiet = mode == "auto" && flags == XDP_FLAGS_DRV_MODE;
    const libbpf_print_fn_t saved = quiet ? libbpf_set_print(nullptr) : nullptr;
    err = bpf_xdp_attach(ifindex, prog_fd_, flags | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
    if (quiet) libbpf_set_print(saved);
    if (err == 0) {
      ifindex_ = ifindex;
      attach_flags_ = flags;
      netns_fd_ = NetnsFd::open_current();
      return true;
    }
    if (err == -EPERM || err == -EACCES) {
      *error = "afxdp: cannot attach XDP program to '" + ifname + "': " + errno_text(err) + " (need CAP_NET_ADMIN)";
      return false;
    }
    if (err == -EBUSY || err == -EEXIST) {
      *error = "ifname: '" + ifname + "' already has an XDP program attached (attached concurrently by another process?)";
      return false;
    }
    if (flags == XDP_FLAGS_DRV_MODE) native_failure = errno_text(err);
  }
  if (mode == "native") {
    *error = "xdp_mode: '" + ifname + "' cannot run XDP in native mode: " + native_failure +
             " (use xdp_mode \"skb\" or \"auto\")";
  } else {
    *error = "xdp_mode: cannot attach XDP program to '" + ifname + "' in skb mode: " + errno_text(err) +
             (native_failure.empty() ? "" : " (native mode: " + native_failure + ")");
  }
  return false;
}

void XdpProgram::detach() {
  if (attach_flags_ == 0) return;
  // Interface indexes are per namespace: detach in the one we attached in.
  const int current = netns_fd_ >= 0 ? NetnsFd::open_current() : -1;
  const bool enter = current >= 0 && !NetnsFd::same(current, netns_fd_);
  const bool entered = enter && setns(netns_fd_, CLONE_NEWNET) == 0;
  if (!enter || entered) {
    bpf_xdp_attach_opts opts{};
    opts.sz = sizeof(opts);
    opts.old_prog_fd = prog_fd_;  // fails harmlessly if someone replaced it or the interface is gone
    bpf_xdp_detach(ifindex_, attach_flags_, &opts);
  }
  if (entered) setns(current, CLONE_NEWNET);
  if (current >= 0) close(current);
  if (netns_fd_ >= 0) close(netns_fd_);
  netns_fd_ = -1;
  attach_flags_ = 0;
}

const char* XdpProgram::attached_mode() const {
  if (attach_flags_ == XDP_FLAGS_DRV_MODE) return "native";
  if (attach_flags_ == XDP_FLAGS_SKB_MODE) return "skb";
  return "";
}

}  // namespace metaroce::datapath::afxdp
