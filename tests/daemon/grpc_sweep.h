// gRPC bad-input sweep (issue 11): every method of every metaroce.v1 service,
// called on a running daemon with an empty request and then with each field of
// the request (one at a time, and each field of a nested message) set to
// hostile values: extreme and negative numbers, NaN and infinities, unknown
// enum values, 4 KiB strings, strings with control characters or invalid
// UTF-8, and lists of 200 entries.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace daemon_test {

struct SweepResult {
  size_t calls = 0;
  std::map<std::string, size_t> codes;   // status code name -> calls
  std::vector<std::string> problems;     // "<method> <case>: <what>"
  std::vector<std::string> accepted;     // "<method> <case>" that returned OK
  std::string undecodable_message;       // what gRPC answers a request it cannot parse
};

// Every call must end in time with a status other than INTERNAL or UNKNOWN (an
// unhandled error), and a one-line message of at most 2 KiB; the daemon must
// still answer Daemon.GetInfo after each. Undecodable requests (invalid UTF-8
// in a string field) are counted apart: gRPC itself answers them.
SweepResult sweep_every_method(const std::string& address, const std::string& token);

}  // namespace daemon_test
