#include "capture_files.h"

#include <filesystem>
#include <fstream>

#include "units.h"

namespace v1 = metaroce::v1;

namespace metarocectl {
namespace {

std::uint64_t fetch_to(Client& c, const std::string& file, const std::string& local_path) {
  std::ofstream out(local_path, std::ios::binary | std::ios::trunc);
  if (!out) throw UsageError("cannot write " + local_path);
  grpc::ClientContext context;
  c.prepare(context, /*streaming=*/true);
  v1::ReadCaptureRequest req;
  req.set_file(file);
  auto reader = c.capture().Read(&context, req);
  v1::CaptureChunk chunk;
  std::uint64_t bytes = 0;
  while (reader->Read(&chunk)) {
    if (chunk.offset() != bytes) {
      context.TryCancel();
      reader->Finish();
      throw UsageError("Capture.Read " + file + ": a chunk at offset " + std::to_string(chunk.offset()) + " after " +
                       std::to_string(bytes) + " bytes");
    }
    out.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
    bytes += chunk.data().size();
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) throw RpcError("Capture.Read", std::move(status));
  out.close();
  if (!out) throw UsageError("cannot write " + local_path);
  return bytes;
}

}  // namespace

std::uint64_t fetch_capture_file(Client& c, const std::string& file, const std::string& local_path) {
  try {
    return fetch_to(c, file, local_path);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(local_path, ec);  // no empty or partial file left behind
    throw;
  }
}

}  // namespace metarocectl
