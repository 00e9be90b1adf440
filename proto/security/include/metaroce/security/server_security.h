// How a metaroce.v1 server proves who it is and checks who calls it, in one
// place: metaroced's control listener (control.tls, control.token_file) and
// the conformance suite's own Peer service (metarocectl conformance run
// --peer-tls-..., --peer-token-file) build their TLS credentials, read their
// token and PEM files and compare bearer tokens here, so a daemon's config key
// and the suite's flag follow the same rules and name themselves in errors.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace metaroce::security {

// A bearer token file: its first line, trailing whitespace removed, must be a
// usable token - kMinTokenChars..kMaxTokenChars printable ASCII characters, no
// spaces - so that a configured token file can never switch authentication
// off (an empty or blank file). Returns "" and sets *token, or an error naming
// `key` (a config key or a flag) and what is allowed.
inline constexpr size_t kMinTokenChars = 16, kMaxTokenChars = 4096;
std::string read_token_file(const std::string& path, const std::string& key, std::string* token);

// A PEM file (TLS key, certificate or CA bundle), at most 1 MiB. Returns ""
// and sets *pem, or an error naming `key` and the file.
std::string read_pem_file(const std::string& path, const std::string& key, std::string* pem);

// TLS credentials from PEM text: tls_credentials.h (the part that needs
// gRPC; this header does not, so config parsers build without it).

// Whether an "authorization" header value is "Bearer <token>", in time that
// does not depend on where they differ (the token is a secret). An empty
// token matches anything: no token configured, no check.
bool bearer_matches(std::string_view header_value, std::string_view token);

// True when a "host:port" names a loopback address (127.0.0.0/8, ::1,
// localhost): the only place either server accepts plain TCP.
bool is_loopback_listen(const std::string& host_port);

}  // namespace metaroce::security
