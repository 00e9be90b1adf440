#include "metaroce/security/tls_credentials.h"

namespace metaroce::security {

std::shared_ptr<grpc::ServerCredentials> server_tls_credentials(const ServerTlsPem& pem) {
  grpc::SslServerCredentialsOptions o(pem.client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  o.pem_key_cert_pairs.push_back({pem.private_key, pem.cert_chain});
  if (!pem.client_ca.empty()) o.pem_root_certs = pem.client_ca;
  return grpc::SslServerCredentials(o);
}

}  // namespace metaroce::security
