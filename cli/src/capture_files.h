// Capture files over the Capture API: copying one of a daemon's capture
// files to a local path (Capture.Read), for `metarocectl capture fetch` and
// the live scenario backend's capture windows.
#pragma once

#include <cstdint>
#include <string>

#include "client.h"

namespace metarocectl {

// Copies the daemon's capture file `file` to local_path (replaced); returns
// its size. Throws RpcError (e.g. NOT_FOUND) or UsageError (local_path cannot
// be written, or the stream's offsets do not follow on), and then leaves no
// local_path behind.
std::uint64_t fetch_capture_file(Client& c, const std::string& file, const std::string& local_path);

}  // namespace metarocectl
