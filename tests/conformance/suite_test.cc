// The conformance suite's own tests, without a daemon: case selection, the
// reports, the data pattern against the daemon's, and the proof that the
// cases catch bugs: an independent in-process responder (fake_dut.h) passes
// every case, and each deliberately broken variant of it fails exactly the
// cases that check what it breaks, and no other.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "case_context.h"
#include "fake_dut.h"
#include "metaroce/capture/pcapng.h"
#include "metaroce/conformance/report.h"
#include "metaroce/conformance/suite.h"
#include "metaroce/daemon/traffic.h"

namespace mc = metaroce::conformance;
using conformance_test::Bugs;
using conformance_test::FakeDut;

namespace {

std::vector<const mc::CaseInfo*> all_cases() {
  std::string error;
  auto cases = mc::select_cases("", "--cases", &error);
  EXPECT_TRUE(error.empty()) << error;
  return cases;
}

std::set<std::string> failed_ids(const std::vector<mc::CaseResult>& results) {
  std::set<std::string> out;
  for (const auto& r : results)
    if (!r.passed) out.insert(r.info->id);
  return out;
}

std::string show(const std::vector<mc::CaseResult>& results) {
  mc::RunSummary run;
  run.target = "fake";
  run.dut = "in-process fake responder";
  run.results = results;
  return mc::render_table(run);
}

}  // namespace

TEST(ConformanceCatalogue, EveryCaseHasAnIdASpecSectionAndWhatItSendsAndExpects) {
  std::set<std::string> ids;
  for (const auto& c : mc::catalogue()) {
    EXPECT_TRUE(ids.insert(c.id).second) << "duplicate id " << c.id;
    EXPECT_EQ(c.id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-"), std::string::npos) << c.id;
    EXPECT_NE(c.id.find('.'), std::string::npos) << c.id << ": group.name";
    EXPECT_EQ(c.spec.rfind("§", 0), 0u) << c.id << ": spec '" << c.spec << "'";
    EXPECT_FALSE(c.title.empty() || c.sends.empty() || c.expects.empty()) << c.id;
    EXPECT_NE(c.run, nullptr) << c.id;
  }
  EXPECT_GE(ids.size(), 22u);
}

TEST(ConformanceSelect, GlobsSelectInCatalogueOrderAndBadPatternsNameTheFlag) {
  EXPECT_TRUE(mc::glob_match("sack.*", "sack.gaps"));
  EXPECT_TRUE(mc::glob_match("*.bad-*", "nak.bad-key"));
  EXPECT_TRUE(mc::glob_match("nak.bad-ke?", "nak.bad-key"));
  EXPECT_FALSE(mc::glob_match("sack.*", "nak.bad-key"));
  EXPECT_FALSE(mc::glob_match("sack", "sack.gaps"));
  std::string error;
  auto cases = mc::select_cases("nak.bad-key,sack.*", "--cases", &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_GE(cases.size(), 2u);
  EXPECT_EQ(cases.front()->id.rfind("sack.", 0), 0u) << "catalogue order, not pattern order";
  EXPECT_EQ(cases.back()->id, "nak.bad-key");
  EXPECT_TRUE(mc::select_cases("nosuch.*", "--cases", &error).empty());
  EXPECT_NE(error.find("--cases: pattern 'nosuch.*' matches no case; the cases are: placement.in-order"),
            std::string::npos)
      << error;
  EXPECT_TRUE(mc::select_cases("sack.gaps,,nak.*", "--cases", &error).empty());
  EXPECT_NE(error.find("--cases: each comma-separated pattern is a case id or a glob"), std::string::npos) << error;
  EXPECT_TRUE(mc::select_cases("SACK.*", "--cases", &error).empty());
  EXPECT_NE(error.find("(got 'SACK.*')"), std::string::npos) << error;
}

// The suite rebuilds the daemon's Peer.Verify pattern from its definition
// (traffic.h) instead of linking the daemon; this pins the two together.
TEST(ConformancePattern, IsTheDaemonsPeerVerifyPattern) {
  for (uint64_t seed : {1ull, 0xDEADBEEFull})
    for (uint64_t slot : {0ull, 7ull, 1000ull})
      for (uint64_t word : {0ull, 1ull, 127ull})
        EXPECT_EQ(mc::pattern_word(seed, slot, word), metaroce::daemon::pattern_word(seed, slot, word));
  EXPECT_EQ(mc::message_header(3, 41), metaroce::daemon::message_header(3, 41));
}

TEST(ConformanceFake, AnIndependentCorrectResponderPassesEveryCase) {
  FakeDut dut;
  const auto results = mc::run_cases(dut, all_cases(), mc::RunOptions{});
  EXPECT_TRUE(failed_ids(results).empty()) << show(results);
  EXPECT_EQ(results.size(), mc::catalogue().size());
}

// Each broken responder must fail exactly these cases. Cases outside a bug's
// own group are listed where they read the broken behaviour as evidence (the
// fences of nak.unknown-connection and crc.bad-trailer check SACK bits; that of
// retransmit.exact-hole is an UNKNOWN_CONNECTION NAK).
TEST(ConformanceFake, EachBrokenResponderFailsExactlyTheCasesThatCheckItsBug) {
  struct Variant {
    const char* name;
    Bugs bugs;
    std::set<std::string> must_fail;
  };
  auto with = [](auto set) {
    Bugs b;
    set(b);
    return b;
  };
  const std::vector<Variant> variants = {
      {"ignores SACK gaps (cum_seq only)", with([](Bugs& b) { b.ignore_sack_gaps = true; }),
       {"sack.gaps", "sack.window-edge", "sack.floor-slide", "sack.sequence-wrap", "nak.unknown-connection",
        "crc.bad-trailer"}},
      {"accepts a wrong key", with([](Bugs& b) { b.accept_wrong_key = true; }), {"nak.bad-key", "nak.stream-error"}},
      {"skips the CRC32C check", with([](Bugs& b) { b.no_crc_check = true; }), {"crc.bad-trailer"}},
      // Completing early also makes it take the message's remaining chunks for
      // duplicates: read.after-write reads back a chunk that never landed.
      {"completes a message at its LAST chunk (out of order)", with([](Bugs& b) { b.complete_out_of_order = true; }),
       {"placement.out-of-order", "read.after-write"}},
      {"places duplicate chunks again", with([](Bugs& b) { b.place_duplicates = true; }), {"placement.duplicate"}},
      // retransmit.exact-hole's fence is an UNKNOWN_CONNECTION NAK.
      {"answers no UNKNOWN_CONNECTION", with([](Bugs& b) { b.silent_unknown_connection = true; }),
       {"nak.unknown-connection", "retransmit.exact-hole"}},
      {"ignores path_floor", with([](Bugs& b) { b.ignore_path_floor = true; }),
       {"sack.floor-slide", "sack.sequence-wrap"}},
      {"sends no rate hint", with([](Bugs& b) { b.no_rate_hint = true; }), {"ack.rate-hint"}},
      {"echoes no ECN", with([](Bugs& b) { b.no_ecn_echo = true; }), {"ack.ecn-echo"}},
      {"executes a replayed atomic again", with([](Bugs& b) { b.replay_atomics = true; }), {"atomic.replay-once"}},
      {"completes WRITE_IMMs in arrival order", with([](Bugs& b) { b.complete_in_arrival_order = true; }),
       {"completion.stream-order"}},
      {"places only a message's first chunk", with([](Bugs& b) { b.place_first_chunk_only = true; }),
       {"read.after-write"}},
      {"swaps without comparing", with([](Bugs& b) { b.swap_without_compare = true; }), {"atomic.compare-swap"}},
      {"sender goes back N (resends SACKed chunks)", with([](Bugs& b) { b.go_back_n = true; }),
       {"retransmit.exact-hole"}},
      {"sender never retransmits a SACKed hole", with([](Bugs& b) { b.no_fast_retransmit = true; }),
       {"retransmit.exact-hole"}},
      {"sender retransmits under the lost seq", with([](Bugs& b) { b.retransmit_same_seq = true; }),
       {"retransmit.exact-hole"}},
      {"requester completes READs in arrival order", with([](Bugs& b) { b.complete_reads_in_arrival_order = true; }),
       {"completion.requester-order"}},
      {"RoCEv2 responder NAKs every out-of-sequence PSN", with([](Bugs& b) { b.nak_every_oos_psn = true; }),
       {"rocev2.nak-first-oos-psn"}},
      {"RoCEv2 responder never NAKs an out-of-sequence PSN", with([](Bugs& b) { b.never_nak_oos_psn = true; }),
       {"rocev2.nak-first-oos-psn"}},
      {"RoCEv2 responder places out-of-sequence WRITEs", with([](Bugs& b) { b.place_oos_psn = true; }),
       {"rocev2.nak-first-oos-psn"}},
  };
  std::printf("%-55s %s\n", "broken responder", "cases failed");
  for (const Variant& v : variants) {
    FakeDut dut(v.bugs);
    const auto results = mc::run_cases(dut, all_cases(), mc::RunOptions{});
    const std::set<std::string> failed = failed_ids(results);
    std::string list;
    for (const auto& id : failed) list += (list.empty() ? "" : ", ") + id;
    std::printf("%-55s %s\n", v.name, list.c_str());
    EXPECT_EQ(failed, v.must_fail) << v.name << "\n" << show(results);
    // Every failure says what it expected and saw, and keeps the packets.
    for (const auto& r : results)
      if (!r.passed) {
        EXPECT_NE(r.failure.find("expected "), std::string::npos) << r.info->id << ": " << r.failure;
        EXPECT_FALSE(r.sent.empty()) << r.info->id;
      }
  }
}

TEST(ConformanceReport, JsonAndJunitCarryEveryCaseAndEscapeWhatTheyQuote) {
  FakeDut dut(Bugs{.accept_wrong_key = true});
  mc::RunSummary run;
  run.target = "unix:///tmp/<odd>&\"name\".sock";
  run.dut = dut.describe();
  run.results = mc::run_cases(dut, all_cases(), mc::RunOptions{});
  const auto j = nlohmann::json::parse(mc::render_json(run));
  EXPECT_EQ(j["target"], run.target);
  ASSERT_EQ(j["cases"].size(), mc::catalogue().size());
  EXPECT_EQ(j["failed"], 2);
  for (const auto& c : j["cases"]) {
    EXPECT_TRUE(c["result"] == "PASS" || c["result"] == "FAIL") << c.dump();
    EXPECT_EQ(c["spec"].get<std::string>().rfind("§", 0), 0u);
    if (c["id"] == "nak.bad-key") {
      EXPECT_EQ(c["result"], "FAIL");
      EXPECT_FALSE(c["sent"].empty());
      EXPECT_FALSE(c["seen"].empty());
    }
  }
  const std::string xml = mc::render_junit(run);
  EXPECT_NE(xml.find("tests=\"" + std::to_string(mc::catalogue().size()) + "\" failures=\"2\""), std::string::npos);
  EXPECT_NE(xml.find("&lt;odd&gt;&amp;&quot;name&quot;"), std::string::npos) << "attribute values escaped";
  EXPECT_EQ(xml.find("<odd>"), std::string::npos);
  EXPECT_NE(xml.find("<testcase classname=\"conformance.nak\" name=\"nak.bad-key\""), std::string::npos);
  // A pcapng per failed case, named after it, its path in every output.
  const std::string dir = testing::TempDir() + "conformance-pcaps-" + std::to_string(getpid());
  std::string error;
  ASSERT_TRUE(mc::write_failure_pcaps(run, dir, &error)) << error;
  for (const auto& r : run.results) {
    if (r.passed) {
      EXPECT_TRUE(r.pcap.empty());
      continue;
    }
    EXPECT_EQ(r.pcap, dir + "/" + r.info->id + ".pcapng");
    std::ifstream in(r.pcap, std::ios::binary);
    std::vector<uint8_t> head(4);
    in.read(reinterpret_cast<char*>(head.data()), 4);
    EXPECT_EQ(head, (std::vector<uint8_t>{0x0A, 0x0D, 0x0D, 0x0A})) << "a pcapng section header";
    EXPECT_GT(std::filesystem::file_size(r.pcap), 28u * r.frames.size()) << "every frame written";
    EXPECT_FALSE(r.frames.empty());
  }
  EXPECT_NE(mc::render_junit(run).find("pcap: " + dir + "/nak.bad-key.pcapng"), std::string::npos);
  std::filesystem::remove_all(dir);
  const std::string table = mc::render_table(run);
  EXPECT_NE(table.find("nak.bad-key"), std::string::npos);
  EXPECT_NE(table.find("FAIL"), std::string::npos);
  EXPECT_NE(table.find("sent: WRITE"), std::string::npos) << table;
}

// RoCEv2 frames go to a failed case's pcap as they crossed (their ICRC covers
// the IP and UDP headers), not framed again on the MetaRoCE flow.
TEST(ConformanceReport, RoceV2FramesGoToThePcapAsTheyWere) {
  namespace mw = metaroce::wire;
  FakeDut dut(Bugs{.nak_every_oos_psn = true});
  std::string error;
  mc::RunSummary run;
  run.flow = dut.flow_to_dut();
  run.results = mc::run_cases(dut, mc::select_cases("rocev2.*", "--cases", &error), mc::RunOptions{});
  ASSERT_EQ(run.results.size(), 1u) << error;
  ASSERT_EQ(run.failed(), 1u);
  const std::string dir = testing::TempDir() + "conformance-rocev2-pcaps-" + std::to_string(getpid());
  ASSERT_TRUE(mc::write_failure_pcaps(run, dir, &error)) << error;
  const auto file = metaroce::capture::read_pcapng(run.results[0].pcap, &error);
  ASSERT_TRUE(file) << error;
  const auto& frames = run.results[0].frames;
  ASSERT_EQ(file->frames.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE(frames[i].comment);
    EXPECT_TRUE(frames[i].whole_frame);
    EXPECT_EQ(file->frames[i].bytes, frames[i].packet);
    const auto udp = mw::decode_udp_frame(file->frames[i].bytes);
    ASSERT_TRUE(udp);
    EXPECT_EQ(udp->flow.dst_port, mw::rocev2::kUdpPort);
    mw::rocev2::PacketView v;
    EXPECT_TRUE(mw::rocev2::decode(file->frames[i].bytes, udp->payload, v)) << "the ICRC still checks";
  }
  std::filesystem::remove_all(dir);
}
