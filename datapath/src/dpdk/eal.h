// Internal: the process-wide DPDK environment (EAL) behind every DPDK port.
//
// DPDK's EAL can be initialised once per process, so this is control-plane
// state shared by all ports, kept apart from the per-burst datapath
// (dpdk_port.cc), as eRPC keeps dpdk_init apart from its datapath.
//
// - The first DPDK port opened initialises the EAL from its
//   PortConfig::eal_args. Later ports must pass the same arguments or none at
//   all (empty = "whatever this process already has"); different arguments are
//   refused with an error, never silently ignored.
// - If the application initialised the EAL itself (rte_eal_init returns
//   EALREADY on our first call), we use it as is and never clean it up.
// - rte_eal_init pins the calling thread to the main lcore's CPUs; we restore
//   the caller's affinity afterwards (the datapath chooses its own pinning).
// - At process exit (atexit), rte_eal_cleanup runs only when we initialised
//   the EAL and every port has been closed (a leaked port keeps its memory and
//   skips the cleanup rather than tear down memory a driver may still touch).
//   Then the empty runtime directory (/var/run/dpdk/<file-prefix>) is removed.
//
// Everything here takes a mutex; call it from the control plane only (open
// and close of ports), never from the burst calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace metaroce::datapath::dpdk {

// Makes sure the EAL is up. On failure returns false and sets *error to one
// line starting "eal_args: ".
bool ensure_eal(const std::vector<std::string>& eal_args, std::string* error);

// One ethdev is owned by at most one open Port. claim_ethdev() fails (false,
// *owner = the name of the port holding it) when it is already claimed.
// Claims also count open ports for the exit-time cleanup.
bool claim_ethdev(uint16_t port_id, const std::string& port_name, std::string* owner);
void release_ethdev(uint16_t port_id);

// A process-unique number, for unique DPDK object names (mempools).
uint32_t next_object_id();

}  // namespace metaroce::datapath::dpdk
