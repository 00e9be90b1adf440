// make_port_config: which DPDK device and EAL arguments an endpoint's
// interface gets. A lab interface gets net_af_packet without hugepages or the
// PCI bus; a PCI device (endpoint.dpdk_devices) gets the PCI bus and
// hugepages, and no ",iface=" (it has no kernel interface under vfio-pci).
#include <gtest/gtest.h>

#include <algorithm>

#include "endpoint_runtime.h"

namespace md = metaroce::daemon;

namespace {
bool has(const std::vector<std::string>& args, const std::string& a) {
  return std::find(args.begin(), args.end(), a) != args.end();
}
}  // namespace

TEST(PortConfig, DpdkLabInterfaceGetsAfPacketWithoutHugepagesOrPci) {
  const auto c = md::make_port_config("dpdk", "p1", "plane1", 2048, "skb", false, {4794}, {}, 1, "mrd-t");
  EXPECT_EQ(c.dpdk_device, "net_af_packet1,iface=p1");
  EXPECT_TRUE(has(c.eal_args, "--no-huge"));
  EXPECT_TRUE(has(c.eal_args, "--no-pci"));
  EXPECT_TRUE(has(c.eal_args, "--file-prefix=mrd-t"));
}

TEST(PortConfig, DpdkPciDeviceGetsThePciBusAndHugepages) {
  const auto c = md::make_port_config("dpdk", "p0", "plane0", 2048, "skb", false, {4794}, {}, 0, "mrd-t", "0000:3b:02.0");
  EXPECT_EQ(c.dpdk_device, "0000:3b:02.0");
  EXPECT_FALSE(has(c.eal_args, "--no-huge"));
  EXPECT_FALSE(has(c.eal_args, "--no-pci"));
  EXPECT_TRUE(has(c.eal_args, "--file-prefix=mrd-t"));
}

TEST(PortConfig, DpdkVirtualDeviceAndOperatorEalArgsAreTakenAsGiven) {
  const auto c = md::make_port_config("dpdk", "p0", "plane0", 2048, "skb", false, {4794}, {"-l", "1", "--in-memory"}, 0,
                                      "mrd-t", "net_af_xdp0,iface=p0");
  EXPECT_EQ(c.dpdk_device, "net_af_xdp0,iface=p0");
  EXPECT_EQ(c.eal_args, (std::vector<std::string>{"-l", "1", "--in-memory"}));
}
