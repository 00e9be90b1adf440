// A metaroce.v1 server's TLS credentials (metaroced's control listener, the
// conformance suite's Peer service), built in one place. Apart from
// server_security.h because it needs gRPC and the config parsers do not.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

namespace metaroce::security {

// A server's TLS identity as PEM text. With client_ca set the server asks
// every client for a certificate and accepts only one that CA signed (mutual
// TLS); without it, clients are not asked for one.
struct ServerTlsPem {
  std::string cert_chain;
  std::string private_key;
  std::string client_ca;
};
std::shared_ptr<grpc::ServerCredentials> server_tls_credentials(const ServerTlsPem& pem);

}  // namespace metaroce::security
