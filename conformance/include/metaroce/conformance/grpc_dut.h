// A DUT that is a metaroced (or anything serving metaroce.v1): control over
// its gRPC API (Daemon.GetInfo / GetConfig, Peer.Accept / Verify / Release,
// Memory.Register / Deregister), packets over a UDP socket of the suite's own
// to the endpoint's address and MetaRoCE port. The suite plays the requester
// daemon: it accepts connections at the DUT under its own ids and socket.
//
// Addresses: the suite sends from and listens on the DUT's MetaRoCE port
// (both ends of a connection use the same one, §1.2: the DUT answers a packet
// for an unknown connection there). The DUT answers a path from the UDP
// source port the path's data came from (reflected entropy, §1.3), from a
// socket on its own address; so the suite needs an address of its own. On
// loopback it takes another 127/8 address (127.0.0.1 <-> 127.0.0.2), else the
// address the kernel routes to the DUT from; `local_ip` overrides. RoCEv2
// (§12) goes to UDP 4791 both ways: the first case that opens a RoCEv2 QP
// binds the suite's address on 4791 too, and sends its RoCEv2 frames from it.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>

#include "metaroce/conformance/dut.h"

namespace metaroce::conformance {

struct GrpcDutOptions {
  std::string target;                                 // as given (for reports)
  std::shared_ptr<grpc::Channel> channel;             // to the DUT's daemon
  std::function<void(grpc::ClientContext&)> prepare;  // adds the token and the deadline of each call
  std::string local_ip;                               // "" = chosen as above
};

// Opens the suite's socket after asking the daemon for its endpoint. Throws
// DutError ("Daemon.GetInfo: UNAVAILABLE: ...", "local_ip: ...").
std::unique_ptr<Dut> connect_grpc_dut(const GrpcDutOptions& options);

}  // namespace metaroce::conformance
