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
#include <optional>
#include <string>

#include "metaroce/conformance/dut.h"
#include "metaroce/security/server_security.h"
#include "metaroce/security/tls_credentials.h"

namespace metaroce::conformance {

// The suite's own Peer service, which the DUT's daemon calls (Peer.Accept)
// in the cases where the DUT sends. Without `listen` it is a Unix socket in a
// fresh directory under /tmp, started at the first such case: the DUT must
// share the suite's host. With `listen` it is a TCP listener, started before
// any case, that a DUT on another host reaches:
//  * listen: "HOST:PORT", PORT in [0, 65535], 0 = a free port the kernel picks.
//    Plain TCP only on a loopback address; elsewhere `tls` is required.
//  * address: what the suite tells the DUT to dial (the job's peer address);
//    "" = the listen address with the port bound, its host replaced by the
//    suite's packet address (local_ip) when it is a wildcard (0.0.0.0, [::]).
//  * tls: the service's certificate; with tls->client_ca, mutual TLS. The DUT's
//    daemon dials TCP peers with its own control.peer_tls (ca: trusts this
//    certificate's issuer; cert/key: a client certificate client_ca signed),
//    as it dials any peer daemon.
//  * token: when set, every call must carry "authorization: Bearer <token>"
//    (what a daemon sends its peers: control.peer_token_file, else token_file).
// Errors name the metarocectl flags: --peer-listen, --peer-address, ...
struct PeerServiceOptions {
  std::string listen;
  std::string address;
  std::optional<security::ServerTlsPem> tls;
  std::string token;
};

struct GrpcDutOptions {
  std::string target;                                 // as given (for reports)
  std::shared_ptr<grpc::Channel> channel;             // to the DUT's daemon
  std::function<void(grpc::ClientContext&)> prepare;  // adds the token and the deadline of each call
  std::string local_ip;                               // "" = chosen as above
  PeerServiceOptions peer;
};

// Opens the suite's socket after asking the daemon for its endpoint, and
// starts a TCP Peer service. Throws DutError ("Daemon.GetInfo: UNAVAILABLE:
// ..."), DutSetupError for bad options ("--local-ip: ...", "--peer-listen: ...").
std::unique_ptr<Dut> connect_grpc_dut(const GrpcDutOptions& options);

}  // namespace metaroce::conformance
