#include "metaroce/security/server_security.h"

#include "metaroce/lab/config.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::security {

std::string read_token_file(const std::string& path, const std::string& key, std::string* token) {
  std::string err;
  const auto text = lab::read_config_text(path, 64 << 10, &err);
  if (!text) return key + ": " + err;
  std::string t = text->substr(0, text->find('\n'));
  while (!t.empty() && (t.back() == '\r' || t.back() == ' ' || t.back() == '\t')) t.pop_back();
  if (t.size() < kMinTokenChars || t.size() > kMaxTokenChars)
    return key + ": the first line of '" + path + "' must be a token of " + std::to_string(kMinTokenChars) + " to " +
           std::to_string(kMaxTokenChars) + " characters (got " + std::to_string(t.size()) +
           "); an empty token would turn authentication off";
  for (const char ch : t)
    if (ch <= ' ' || ch > '~')
      return key + ": the token in '" + path + "' must be printable ASCII without spaces (it travels in an HTTP header)";
  *token = std::move(t);
  return {};
}

std::string read_pem_file(const std::string& path, const std::string& key, std::string* pem) {
  std::string err;
  const auto text = lab::read_config_text(path, 1 << 20, &err);
  if (!text) return key + ": " + err;
  *pem = *text;
  return {};
}

bool bearer_matches(std::string_view v, std::string_view token) {
  if (token.empty()) return true;
  const std::string want = "Bearer " + std::string(token);
  if (v.size() != want.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < v.size(); ++i) diff |= static_cast<unsigned>(v[i] ^ want[i]);
  return diff == 0;
}

bool is_loopback_listen(const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  std::string host = host_port.substr(0, colon == std::string::npos ? host_port.size() : colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost" || host == "::1") return true;
  const auto ip = wire::parse_ipv4(host.c_str());
  return ip && (*ip >> 24) == 127;
}

}  // namespace metaroce::security
