// Internal: one factory per backend; open_port() dispatches on PortConfig::kind.
#pragma once

#include <memory>
#include <string>

#include "metaroce/datapath/port.h"

namespace metaroce::datapath {

std::unique_ptr<Port> open_memory_port(const PortConfig& config, std::string* error);
std::unique_ptr<Port> open_udp_port(const PortConfig& config, std::string* error);
#ifdef METAROCE_HAVE_AFXDP
std::unique_ptr<Port> open_afxdp_port(const PortConfig& config, std::string* error);
#endif
#ifdef METAROCE_HAVE_DPDK
std::unique_ptr<Port> open_dpdk_port(const PortConfig& config, std::string* error);
#endif

}  // namespace metaroce::datapath
