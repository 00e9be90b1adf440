// The two shapes of a DPDK device name (PortConfig::dpdk_device, the daemon's
// endpoint.dpdk_devices): a PCI address, "0000:3b:02.0" or "3b:02.0" (a NIC or
// an SR-IOV VF bound to vfio-pci, probed on the EAL's PCI bus), or a virtual
// device, "net_<driver><n>" with optional ",key=value" arguments
// ("net_af_xdp0,iface=p0"). Only a virtual device takes ",iface=" from
// PortConfig::ifname. Header-only: the daemon's config parser (and its fuzzer)
// checks names without linking the datapath.
#pragma once

#include <algorithm>
#include <cctype>
#include <string_view>

namespace metaroce::datapath {

namespace dpdk_device_name_detail {
inline bool hex_digits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}
}  // namespace dpdk_device_name_detail

// [DDDD:]BB:DD.F, function F in 0-7.
inline bool is_dpdk_pci_address(std::string_view d) {
  using dpdk_device_name_detail::hex_digits;
  if (d.size() == 12 && d[4] == ':') {
    if (!hex_digits(d.substr(0, 4))) return false;
    d.remove_prefix(5);
  }
  return d.size() == 7 && hex_digits(d.substr(0, 2)) && d[2] == ':' && hex_digits(d.substr(3, 2)) && d[5] == '.' &&
         d[6] >= '0' && d[6] <= '7';
}

// net_[a-z0-9_]+ (up to 64 characters), then optional ",arguments".
inline bool is_dpdk_vdev(std::string_view d) {
  const std::string_view name = d.substr(0, d.find(','));
  if (name.size() < 5 || name.size() > 64 || name.substr(0, 4) != "net_") return false;
  return std::all_of(name.begin() + 4, name.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace metaroce::datapath
