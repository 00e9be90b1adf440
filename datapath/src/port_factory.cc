#include "backends.h"

namespace metaroce::datapath {

std::vector<std::string> supported_port_kinds() {
  std::vector<std::string> k{"memory", "udp"};
#ifdef METAROCE_HAVE_AFXDP
  k.push_back("afxdp");
#endif
#ifdef METAROCE_HAVE_DPDK
  k.push_back("dpdk");
#endif
  return k;
}

std::unique_ptr<Port> open_port(const PortConfig& config, std::string* error) {
  std::string scratch;
  if (!error) error = &scratch;
  if (config.frame_size < 64 || config.frame_size > 9216) {
    *error = "frame_size: must be in [64, 9216] (got " + std::to_string(config.frame_size) + ")";
    return nullptr;
  }
  if (config.burst == 0 || config.burst > 256) {
    *error = "burst: must be in [1, 256] (got " + std::to_string(config.burst) + ")";
    return nullptr;
  }
  if (config.kind == "memory") return open_memory_port(config, error);
  if (config.kind == "udp") return open_udp_port(config, error);
  if (config.kind == "afxdp") {
#ifdef METAROCE_HAVE_AFXDP
    return open_afxdp_port(config, error);
#else
    *error = "kind: 'afxdp' support was not built (libxdp-dev/libbpf-dev or clang missing at configure time)";
    return nullptr;
#endif
  }
  if (config.kind == "dpdk") {
#ifdef METAROCE_HAVE_DPDK
    return open_dpdk_port(config, error);
#else
    *error = "kind: 'dpdk' support was not built (libdpdk-dev missing at configure time)";
    return nullptr;
#endif
  }
  std::string kinds;
  for (const auto& k : supported_port_kinds()) kinds += (kinds.empty() ? "" : ", ") + k;
  *error = "kind: must be one of " + kinds + " (got '" + config.kind + "')";
  return nullptr;
}

}  // namespace metaroce::datapath
