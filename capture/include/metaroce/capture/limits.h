// What a capture request may ask for: the one statement of these ranges, read
// by the daemon that checks a Capture.Start (daemon/src/capture.cc), by
// metarocectl capture's help, and by the scenario parser (a scenario's
// capture windows become such requests).
#pragma once

#include <cstdint>
#include <string>

namespace metaroce::capture {

// Bytes kept of each frame: 0 (whole frames) or [kMinSnapLength, kMaxSnapLength].
inline constexpr uint32_t kMinSnapLength = 64;
inline constexpr uint32_t kMaxSnapLength = 9216;  // the largest frame a worker handles: all of it
// Bounds of one capture (0: none): the capture stops at the first reached.
inline constexpr uint64_t kMaxPackets = 100'000'000;
inline constexpr uint64_t kMaxBytes = 64ull << 30;
inline constexpr uint64_t kMaxDurationNs = 24ull * 3600 * 1'000'000'000;
// A ring of files for long runs: ring_files files, each closed at
// ring_file_bytes file bytes or ring_file_packets frames, the oldest removed.
inline constexpr uint32_t kMinRingFiles = 2, kMaxRingFiles = 1000;
inline constexpr uint64_t kMinRingFileBytes = 64ull << 10, kMaxRingFileBytes = kMaxBytes;
inline constexpr uint64_t kMaxRingFilePackets = kMaxPackets;
// File names: letters, digits, '.', '_', '-'; not starting with '.'; ending in .pcapng.
inline constexpr size_t kMaxFileNameChars = 128;
bool file_name_ok(const std::string& name);
// The rule above in words, for error messages.
inline constexpr const char* kFileNameRule =
    "a file name of 1-128 letters, digits, '.', '_' or '-', not starting with '.' and ending in .pcapng";

}  // namespace metaroce::capture
