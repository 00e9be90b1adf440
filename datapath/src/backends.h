// Internal: one factory per backend; open_port() dispatches on PortConfig::kind.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "metaroce/datapath/port.h"

namespace metaroce::datapath {

// The software ports (memory, udp) keep their rings in ordinary memory: any
// size from 1 to kMaxSoftwareRingSize descriptors. Returns the error for
// PortConfig::ring_size, or "" when it is allowed.
inline constexpr uint32_t kMaxSoftwareRingSize = 65536;
inline std::string software_ring_size_error(uint32_t ring_size) {
  if (ring_size >= 1 && ring_size <= kMaxSoftwareRingSize) return {};
  return "ring_size: must be in [1, " + std::to_string(kMaxSoftwareRingSize) + "] (got " + std::to_string(ring_size) +
         ")";
}

std::unique_ptr<Port> open_memory_port(const PortConfig& config, std::string* error);
std::unique_ptr<Port> open_udp_port(const PortConfig& config, std::string* error);
#ifdef METAROCE_HAVE_AFXDP
std::unique_ptr<Port> open_afxdp_port(const PortConfig& config, std::string* error);
#endif
#ifdef METAROCE_HAVE_DPDK
std::unique_ptr<Port> open_dpdk_port(const PortConfig& config, std::string* error);
#endif

}  // namespace metaroce::datapath
