// A pcapng per failed case: the case's packets as they crossed the wire, in
// Ethernet/IPv4/UDP frames between the suite and the DUT, each with a comment.
#include <filesystem>
#include <system_error>

#include "metaroce/capture/pcapng.h"
#include "metaroce/conformance/report.h"

namespace metaroce::conformance {

bool write_failure_pcaps(RunSummary& run, const std::string& dir, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    *error = "--pcap-dir: cannot create '" + dir + "': " + ec.message();
    return false;
  }
  wire::UdpFlow back = run.flow;
  std::swap(back.src_ip, back.dst_ip);
  std::swap(back.src_mac, back.dst_mac);
  std::swap(back.src_port, back.dst_port);
  for (CaseResult& r : run.results) {
    if (r.passed) continue;
    const std::string path = (std::filesystem::path(dir) / (r.info->id + ".pcapng")).string();
    capture::PcapngWriter w(path, {capture::PcapngInterface{"conformance suite <-> DUT"}}, "metarocectl conformance");
    if (!w.ok()) {
      *error = "--pcap-dir: " + w.error();
      return false;
    }
    std::vector<uint8_t> frame;
    for (const CaseFrame& f : r.frames) {
      if (f.whole_frame) {
        w.write(0, f.time_ns, f.packet, f.comment);
        continue;
      }
      frame.assign(wire::kUdpFrameHeaderBytes + f.packet.size(), 0);
      if (wire::encode_udp_headers(frame, f.from_dut ? back : run.flow, f.ecn, 0, f.packet.size()) == 0) continue;
      std::copy(f.packet.begin(), f.packet.end(), frame.begin() + wire::kUdpFrameHeaderBytes);
      w.write(0, f.time_ns, frame, f.comment);
    }
    if (!w.flush() || w.counters().frames_not_written > 0) {
      *error = "--pcap-dir: writing '" + path + "' failed";
      return false;
    }
    r.pcap = path;
  }
  return true;
}

}  // namespace metaroce::conformance
