// Traffic driver and responder over the real transport engine in the
// deterministic simulator: every operation under loss with verification,
// size sweeps, iteration- and duration-bounded phases, stop/drain, detection
// of corrupted targets and wrong atomics, RoCEv2 limits, spec validation, and
// the latency histogram's accuracy. Virtual time only; every run is bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "metaroce/api/operation_codec.h"
#include "metaroce/daemon/traffic.h"

// Counts heap allocations made while the current thread is inside a driver or
// responder call on the per-message path (see Job::count_allocations).
namespace {
thread_local bool g_count_allocations = false;
std::atomic<uint64_t> g_allocations{0};
}  // namespace

// Out of line so the compiler does not pair an inlined malloc/free with
// new/delete expressions (-Wmismatched-new-delete).
__attribute__((noinline)) void* operator new(std::size_t n) {
  if (g_count_allocations) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

namespace et = engine_test;
namespace md = metaroce::daemon;
namespace mt = metaroce::transport;

using et::kMs;
using et::kUs;
using md::Operation;
using mt::Nanos;

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// ------------------------------------------------------------------ pattern, layout, names

TEST(Pattern, FillThenCheckMatchesIncludingPartialLastWord) {
  for (size_t n : {1u, 7u, 8u, 9u, 64u, 1021u}) {
    std::vector<uint8_t> buf(n + 8, 0xEE);
    md::fill_pattern(buf.data(), n, 42, 3);
    EXPECT_EQ(md::check_pattern(buf.data(), n, 42, 3), SIZE_MAX) << n;
    EXPECT_EQ(buf[n], 0xEE) << "fill_pattern wrote past n=" << n;
    // Word w holds pattern_word(seed, slot, w), low byte first.
    const uint64_t w0 = md::pattern_word(42, 3, 0);
    for (size_t b = 0; b < std::min<size_t>(n, 8); ++b) EXPECT_EQ(buf[b], static_cast<uint8_t>(w0 >> (8 * b)));
    // Another slot or seed is a different pattern.
    EXPECT_NE(md::check_pattern(buf.data(), n, 42, 4), SIZE_MAX);
    EXPECT_NE(md::check_pattern(buf.data(), n, 43, 3), SIZE_MAX);
  }
}

TEST(Pattern, CheckReportsFirstMismatchAtOrAfterFromByte) {
  std::vector<uint8_t> buf(100);
  md::fill_pattern(buf.data(), buf.size(), 7, 11);
  buf[3] ^= 1;
  buf[61] ^= 0x80;
  EXPECT_EQ(md::check_pattern(buf.data(), buf.size(), 7, 11), 3u);
  EXPECT_EQ(md::check_pattern(buf.data(), buf.size(), 7, 11, 4), 61u);   // inside word 0, after the flip
  EXPECT_EQ(md::check_pattern(buf.data(), buf.size(), 7, 11, 8), 61u);
  EXPECT_EQ(md::check_pattern(buf.data(), buf.size(), 7, 11, 62), SIZE_MAX);
  EXPECT_EQ(md::check_pattern(buf.data(), 61, 7, 11, 8), SIZE_MAX);       // n excludes the flip
  EXPECT_EQ(md::check_pattern(buf.data(), buf.size(), 7, 11, 1000), SIZE_MAX);
}

TEST(Pattern, WordsDoNotRepeatAcrossSlotsWordsAndSeeds) {
  std::vector<uint64_t> words;
  for (uint64_t seed : {1ull, 2ull})
    for (uint64_t slot = 0; slot < 64; ++slot)
      for (uint64_t w = 0; w < 64; ++w) words.push_back(md::pattern_word(seed, slot, w));
  std::sort(words.begin(), words.end());
  EXPECT_EQ(std::adjacent_find(words.begin(), words.end()), words.end());
}

TEST(Layout, SlotsAreTwiceTheQueueDepthAndWordAligned) {
  const md::SlotLayout l = md::make_layout(3, 16, 1000);
  EXPECT_EQ(l.streams, 3u);
  EXPECT_EQ(l.slots_per_stream, 32u);
  EXPECT_EQ(l.slot_bytes, 1000u);
  EXPECT_EQ(md::make_layout(1, 1, 1001).slot_bytes, 1008u);
  EXPECT_EQ(md::make_layout(1, 1, 1).slot_bytes, 8u);
  EXPECT_EQ(l.bytes(), 3u * 32 * 1000);
  EXPECT_EQ(l.slot_index(2, 33), 2u * 32 + 1);
  EXPECT_EQ(l.offset(2, 33), (2u * 32 + 1) * 1000);
  EXPECT_EQ(l.counter_offset(1), l.bytes() + 8);
  EXPECT_EQ(l.target_bytes(), l.bytes() + 24);
}

TEST(Names, OperationsRoundTrip) {
  for (Operation op : {Operation::kWrite, Operation::kWriteImm, Operation::kRead, Operation::kSend,
                       Operation::kFetchAdd, Operation::kCmpSwap}) {
    auto back = md::parse_operation(md::operation_name(op));
    ASSERT_TRUE(back.has_value()) << md::operation_name(op);
    EXPECT_EQ(*back, op);
  }
  EXPECT_STREQ(md::operation_name(Operation::kWriteImm), "write_imm");
  EXPECT_FALSE(md::parse_operation("writ").has_value());
  EXPECT_FALSE(md::parse_operation("").has_value());
}

// One operation table (transport/operations.h) and one API mapping
// (proto/codec): every operation has its own API value and comes back from it.
TEST(Names, EveryOperationHasOneApiValue) {
  std::vector<metaroce::v1::Operation> seen;
  for (const auto& info : metaroce::transport::kOperations) {
    const metaroce::v1::Operation api = metaroce::api::encode_operation(info.op);
    EXPECT_NE(api, metaroce::v1::OPERATION_UNSPECIFIED) << md::operation_name(info.op);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), api), 0) << md::operation_name(info.op);
    seen.push_back(api);
    EXPECT_EQ(metaroce::api::decode_operation(api), info.op);
  }
  EXPECT_EQ(metaroce::api::decode_operation(metaroce::v1::OPERATION_UNSPECIFIED), Operation::kWrite);
  EXPECT_FALSE(metaroce::api::decode_operation(static_cast<metaroce::v1::Operation>(99)).has_value());
  EXPECT_EQ(metaroce::transport::operation_names(", "), "write, write_imm, read, send, fetch_add, cmp_swap");
  EXPECT_EQ(metaroce::transport::operation_names(" | ", true), "write | write_imm | send");
}


// ------------------------------------------------------------------ a job in the simulator

struct JobSetup {
  Operation op = Operation::kWrite;
  std::vector<uint32_t> sizes{4096};
  uint16_t streams = 2;
  uint32_t queue_depth = 8;
  uint64_t iterations = 200;
  Nanos duration_ns = 0;
  bool verify = true;
  size_t connections = 1;
  bool rocev2 = false;
  double loss = 0;
  uint64_t seed = 7;
};

// Requester on A (one TrafficDriver over all connections), one Responder per
// connection on B, completions routed by the harness's listener.
class Job {
 public:
  explicit Job(const JobSetup& s)
      : setup_(s), h_(et::uniform_planes(2, et::make_link(25e9, 2000, {.loss = s.loss})), s.seed) {
    const uint32_t max_bytes = *std::max_element(s.sizes.begin(), s.sizes.end());
    for (size_t i = 0; i < s.connections; ++i) {
      const et::ConnPair cp = s.rocev2 ? h_.connect_rocev2(0) : h_.connect_metaroce(2, s.streams);
      pairs_.push_back(cp);
      md::Responder::Spec rs;
      rs.conn = cp.b;
      rs.streams = s.streams;
      rs.queue_depth = s.queue_depth;
      rs.max_message_bytes = max_bytes;
      rs.recv_message_bytes = s.op == Operation::kSend ? max_bytes : 0;
      rs.seed = s.seed;
      std::string err;
      auto r = md::Responder::create(h_.ep(et::kB), rs, &err);
      EXPECT_TRUE(r) << err;
      if (!r) return;
      conns_.push_back({cp.a, r->target_addr(), r->target_rkey(), r->target_bytes()});
      responders_.push_back(std::move(r));
    }
    h_.add_listener([this](et::Side side, const mt::Completion& c) {
      if (side == et::kA) {
        if (!driver_ || !driver_->owns(c.conn)) return;
        g_count_allocations = count_allocations;
        driver_->on_completion(c, h_.now());
        driver_->pump(h_.now());
        g_count_allocations = false;
        h_.sim().kick(et::kA);
      } else {
        g_count_allocations = count_allocations;
        for (auto& r : responders_)
          if (r->conn() == c.conn) r->on_completion(c, h_.now());
        g_count_allocations = false;
        h_.sim().kick(et::kB);
      }
    });
  }

  md::DriverSpec spec() const {
    md::DriverSpec d;
    d.op = setup_.op;
    d.sizes = setup_.sizes;
    d.streams = setup_.streams;
    d.queue_depth = setup_.queue_depth;
    d.iterations = setup_.iterations;
    d.duration_ns = setup_.duration_ns;
    d.verify = setup_.verify;
    d.seed = setup_.seed;
    return d;
  }

  bool create() { return create(spec(), conns_); }
  bool create(const md::DriverSpec& d, std::vector<md::DriverConnection> conns) {
    driver_ = md::TrafficDriver::create(h_.ep(et::kA), d, std::move(conns), &error_);
    return driver_ != nullptr;
  }

  // The worker loop: pump, let the simulator run, until the driver finished
  // or `bound` of virtual time passed.
  bool run(Nanos bound, const std::function<bool()>& also_stop = {}) {
    return h_.run_until(
        [&] {
          g_count_allocations = count_allocations;
          driver_->pump(h_.now());
          g_count_allocations = false;
          h_.sim().kick(et::kA);
          return driver_->finished() || (also_stop && also_stop());
        },
        bound, 5 * kUs);
  }

  md::VerifyResult verify(size_t ci) const {
    return responders_[ci]->verify(setup_.op, driver_->stream_messages()[ci],
                                   *std::max_element(setup_.sizes.begin(), setup_.sizes.end()));
  }

  uint64_t retransmits() const {
    uint64_t n = 0;
    for (const et::ConnPair& p : pairs_) {
      n += const_cast<et::Harness&>(h_).ep(et::kA).stats(p.a).retransmits;
      n += const_cast<et::Harness&>(h_).ep(et::kB).stats(p.b).retransmits;
    }
    return n;
  }

  uint64_t total_stream_messages() const {
    uint64_t n = 0;
    for (const auto& per_conn : driver_->stream_messages())
      n = std::accumulate(per_conn.begin(), per_conn.end(), n);
    return n;
  }

  bool count_allocations = false;  // count heap allocations inside driver/responder calls
  JobSetup setup_;
  et::Harness h_;
  std::vector<et::ConnPair> pairs_;
  std::vector<std::unique_ptr<md::Responder>> responders_;
  std::vector<md::DriverConnection> conns_;
  std::unique_ptr<md::TrafficDriver> driver_;
  std::string error_;
};

// Everything a clean run must show.
void expect_clean(const Job& job, uint64_t want_messages) {
  const md::TrafficDriver& d = *job.driver_;
  EXPECT_TRUE(d.finished());
  EXPECT_EQ(d.first_error(), "");
  EXPECT_EQ(d.errors(), 0u);
  EXPECT_EQ(d.verify_failures(), 0u);
  EXPECT_EQ(d.completion_errors(), 0u);
  EXPECT_EQ(d.messages_done(), want_messages);
  EXPECT_EQ(job.total_stream_messages(), want_messages);
  for (size_t ci = 0; ci < job.responders_.size(); ++ci) {
    const md::VerifyResult v = job.verify(ci);
    EXPECT_TRUE(v.ok) << "connection " << ci << ": " << v.detail;
    EXPECT_EQ(v.mismatches, 0u);
    EXPECT_GT(v.checked_bytes, 0u);
  }
}

// ------------------------------------------------------------------ every operation, MetaRoCE, 1% loss

class EveryOperation : public ::testing::TestWithParam<Operation> {};

TEST_P(EveryOperation, VerifiesUnderOnePercentLoss) {
  JobSetup s;
  s.op = GetParam();
  s.sizes = {md::is_atomic(s.op) ? 8u : 6000u};  // 2 packets at the default 4096-byte MTU
  s.connections = 2;
  s.streams = 2;
  s.iterations = 300;
  s.loss = 0.01;
  Job job(s);
  ASSERT_TRUE(job.create()) << job.error_;
  job.count_allocations = true;
  g_allocations = 0;
  ASSERT_TRUE(job.run(2000 * kMs)) << "not finished: " << job.driver_->messages_done() << " messages, "
                                   << job.driver_->first_error();
  expect_clean(job, 600);
  EXPECT_GT(job.retransmits(), 0u) << "the loss never hit: the test would not test recovery";
  const auto& phases = job.driver_->phases();
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_EQ(phases[0].messages, 600u);
  EXPECT_EQ(phases[0].bytes, 600u * s.sizes[0]);
  EXPECT_EQ(phases[0].latency.count(), 600u);
  EXPECT_GT(phases[0].latency.min(), 0);
  EXPECT_LT(phases[0].start_ns, phases[0].end_ns);
  EXPECT_EQ(job.driver_->bytes_done(), 600u * s.sizes[0]);
  for (const auto& per_conn : job.driver_->stream_messages()) {
    ASSERT_EQ(per_conn.size(), 2u);
    EXPECT_EQ(per_conn[0] + per_conn[1], 300u);
  }
  EXPECT_EQ(g_allocations.load(), 0u) << "the per-message path allocated";
  for (size_t ci = 0; ci < 2; ++ci) {
    const md::VerifyResult v = job.verify(ci);
    const bool recv = s.op == Operation::kSend || s.op == Operation::kWriteImm;
    EXPECT_EQ(v.received_messages, recv ? 300u : 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Traffic, EveryOperation,
                         ::testing::Values(Operation::kWrite, Operation::kWriteImm, Operation::kRead,
                                           Operation::kSend, Operation::kFetchAdd, Operation::kCmpSwap),
                         [](const auto& info) { return std::string(md::operation_name(info.param)); });

// ------------------------------------------------------------------ phases

TEST(Traffic, SizeSweepRunsOnePhasePerSize) {
  for (Operation op : {Operation::kWrite, Operation::kRead}) {
    SCOPED_TRACE(md::operation_name(op));
    JobSetup s;
    s.op = op;
    s.sizes = {512, 4096, 65536};
    s.iterations = 100;
    Job job(s);
    ASSERT_TRUE(job.create()) << job.error_;
    ASSERT_TRUE(job.run(2000 * kMs));
    expect_clean(job, 300);
    EXPECT_EQ(job.driver_->phase(), 2u);
    const auto& phases = job.driver_->phases();
    ASSERT_EQ(phases.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(phases[k].size, s.sizes[k]);
      EXPECT_EQ(phases[k].messages, 100u);
      EXPECT_EQ(phases[k].bytes, 100u * s.sizes[k]);
      EXPECT_EQ(phases[k].latency.count(), 100u);
      EXPECT_LE(phases[k].start_ns, phases[k].end_ns);
      if (k > 0) {
        EXPECT_GE(phases[k].start_ns, phases[k - 1].end_ns) << "phases overlap";
      }
    }
    for (size_t k = 0; k < 3; ++k) {
      ASSERT_EQ(phases[k].stream_end.size(), 1u);
      ASSERT_EQ(phases[k].stream_end[0].size(), 2u);
      EXPECT_EQ(phases[k].stream_end[0][0] + phases[k].stream_end[0][1], 100u * (k + 1)) << "cumulative";
    }
    EXPECT_EQ(phases[2].stream_end[0], job.driver_->stream_messages()[0]);
    // The phase-aware verify agrees.
    std::vector<md::VerifyPhase> vp;
    for (const md::PhaseResult& p : phases) vp.push_back({p.size, p.stream_end[0]});
    const md::VerifyResult v = job.responders_[0]->verify(op, vp);
    EXPECT_TRUE(v.ok) << v.detail;
    EXPECT_EQ(v.checked_bytes, job.responders_[0]->layout().bytes());
    // Bigger messages take longer at the same depth.
    EXPECT_GT(phases[2].latency.percentile(0.5), phases[0].latency.percentile(0.5));
    EXPECT_EQ(job.driver_->bytes_done(), 100u * (512 + 4096 + 65536));
  }
}

TEST(Traffic, PhasedVerifyKnowsTheSizeOfEachSlotsLastMessage) {
  // Stream indices 0..9 are 4096 bytes, 10..19 are 5 bytes; 16 slots per
  // stream, so slots 0..3 last held a short message (index 16..19), slots
  // 4..9 a 4096-byte one (header), slots 10..15 a short one.
  JobSetup s;
  s.sizes = {4096, 5};
  s.iterations = 20;
  Job job(s);
  ASSERT_TRUE(job.create()) << job.error_;
  ASSERT_TRUE(job.run(100 * kMs));
  const auto& phases = job.driver_->phases();
  ASSERT_EQ(phases.size(), 2u);
  std::vector<md::VerifyPhase> vp;
  for (const md::PhaseResult& p : phases) vp.push_back({p.size, p.stream_end[0]});
  EXPECT_EQ(vp[0].stream_end, (std::vector<uint64_t>{10, 10}));
  EXPECT_EQ(vp[1].stream_end, (std::vector<uint64_t>{20, 20}));
  const md::Responder& r = *job.responders_[0];
  md::VerifyResult v = r.verify(Operation::kWrite, vp);
  ASSERT_TRUE(v.ok) << v.detail;
  uint8_t* target = reinterpret_cast<uint8_t*>(r.target_addr());
  target[r.layout().offset(0, 2) + 2] ^= 4;  // inside a 5-byte message
  v = r.verify(Operation::kWrite, vp);
  EXPECT_EQ(v.mismatches, 1u);
  EXPECT_NE(v.detail.find("stream 0 slot 2 message 18: byte 2"), std::string::npos) << v.detail;
  target[r.layout().offset(0, 2) + 2] ^= 4;
  target[r.layout().offset(1, 6)] ^= 4;  // the header of message 6 of stream 1
  v = r.verify(Operation::kWrite, vp);
  EXPECT_EQ(v.mismatches, 1u);
  EXPECT_NE(v.detail.find("message 6: header"), std::string::npos) << v.detail;
  // Inconsistent input is reported, not trusted.
  vp[1].stream_end.pop_back();
  EXPECT_FALSE(r.verify(Operation::kWrite, vp).ok);
  EXPECT_FALSE(r.verify(Operation::kWrite, std::vector<md::VerifyPhase>{}).ok);
}

TEST(Traffic, IterationsAreExactAndSharedAcrossStreams) {
  JobSetup s;
  s.streams = 3;
  s.queue_depth = 4;
  s.iterations = 37;
  Job job(s);
  ASSERT_TRUE(job.create()) << job.error_;
  EXPECT_EQ(job.driver_->fraction_done(job.h_.now()), 0.0);
  bool saw_middle = false;
  ASSERT_TRUE(job.run(100 * kMs, [&] {
    const double f = job.driver_->fraction_done(job.h_.now());
    saw_middle |= f > 0 && f < 1;
    return false;
  }));
  expect_clean(job, 37);
  EXPECT_TRUE(saw_middle);
  EXPECT_EQ(job.driver_->fraction_done(job.h_.now()), 1.0);
  const auto& per_stream = job.driver_->stream_messages()[0];
  EXPECT_EQ(per_stream, (std::vector<uint64_t>{13, 12, 12}));
  // Nothing more is posted once finished.
  job.h_.run_for(1 * kMs);
  job.driver_->pump(job.h_.now());
  job.h_.run_for(1 * kMs);
  EXPECT_EQ(job.driver_->messages_done(), 37u);
}

TEST(Traffic, DurationBoundPhasesStopPostingAtTheDeadline) {
  JobSetup s;
  s.sizes = {4096, 8192};
  s.iterations = 0;
  s.duration_ns = 400 * kUs;
  Job job(s);
  ASSERT_TRUE(job.create()) << job.error_;
  const Nanos t0 = job.h_.now();
  double at_quarter = -1;
  ASSERT_TRUE(job.run(100 * kMs, [&] {
    if (at_quarter < 0 && job.h_.now() >= t0 + 200 * kUs) at_quarter = job.driver_->fraction_done(job.h_.now());
    return false;
  }));
  const auto& phases = job.driver_->phases();
  ASSERT_EQ(phases.size(), 2u);
  uint64_t total = 0;
  for (const md::PhaseResult& p : phases) {
    EXPECT_GT(p.messages, 100u) << "size " << p.size;
    // Posting stops at the deadline; the last completions drain within a few RTTs.
    EXPECT_GE(p.end_ns - p.start_ns, 400 * kUs - 20 * kUs);
    EXPECT_LE(p.end_ns - p.start_ns, 400 * kUs + 200 * kUs);
    total += p.messages;
  }
  EXPECT_GE(phases[1].start_ns, phases[0].end_ns);
  EXPECT_NEAR(at_quarter, 0.25, 0.05);  // 200 us into the first of two 400 us phases
  expect_clean(job, total);
}

TEST(Traffic, RequestStopDrainsOutstandingAndFinishes) {
  JobSetup s;
  s.op = Operation::kSend;
  s.sizes = {4096, 8192};
  s.iterations = 1'000'000'000;
  Job job(s);
  ASSERT_TRUE(job.create()) << job.error_;
  ASSERT_FALSE(job.run(300 * kUs)) << "an endless job finished by itself";
  EXPECT_GT(job.driver_->messages_done(), 0u);
  job.driver_->request_stop();
  ASSERT_TRUE(job.run(50 * kMs)) << "did not drain after request_stop";
  const uint64_t done = job.driver_->messages_done();
  expect_clean(job, done);
  ASSERT_EQ(job.driver_->phases().size(), 1u) << "stopping must not run the remaining sizes";
  EXPECT_EQ(job.driver_->phases()[0].messages, done);
  EXPECT_EQ(job.verify(0).received_messages, done);
  EXPECT_EQ(job.driver_->fraction_done(job.h_.now()), 1.0);
  // Drained: nothing was left in flight to complete later.
  job.h_.run_for(2 * kMs);
  EXPECT_EQ(job.driver_->messages_done(), done);
  EXPECT_EQ(job.responders_[0]->received_messages(), done);
}

TEST(Traffic, ProgressIsReadableFromAnotherThread) {
  JobSetup s;
  s.iterations = 2000;
  s.sizes = {1024, 2048};
  Job job(s);
  ASSERT_TRUE(job.create()) << job.error_;
  std::atomic<Nanos> now{0};
  std::atomic<bool> done{false};
  std::vector<double> seen;
  std::thread reader([&] {
    // Spins on the progress atomics only, as a status RPC would.
    while (!done.load(std::memory_order_acquire)) {
      const double f = job.driver_->fraction_done(now.load(std::memory_order_relaxed));
      if (seen.empty() || f != seen.back()) seen.push_back(f);
      (void)job.driver_->bytes_done();
      (void)job.driver_->phase();
      if (job.driver_->finished()) break;
    }
  });
  const bool ok = job.run(500 * kMs, [&] {
    now.store(job.h_.now(), std::memory_order_relaxed);
    return false;
  });
  done.store(true, std::memory_order_release);
  reader.join();
  ASSERT_TRUE(ok);
  expect_clean(job, 4000);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_GE(seen[i], 0.0);
    EXPECT_LE(seen[i], 1.0);
    if (i > 0) {
      EXPECT_GE(seen[i], seen[i - 1]) << "progress went backwards at sample " << i;
    }
  }
}

// ------------------------------------------------------------------ detection

TEST(Traffic, CorruptedTargetIsReportedByVerify) {
  JobSetup s;
  s.iterations = 100;
  Job job(s);
  ASSERT_TRUE(job.create()) << job.error_;
  ASSERT_TRUE(job.run(100 * kMs));
  expect_clean(job, 100);
  const md::Responder& r = *job.responders_[0];
  uint8_t* target = reinterpret_cast<uint8_t*>(r.target_addr());
  // A body byte of the slot stream 1's message 3 (or a later one) used.
  target[r.layout().offset(1, 3) + 100] ^= 0x40;
  md::VerifyResult v = job.verify(0);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.mismatches, 1u);
  EXPECT_NE(v.detail.find("stream 1 slot"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("byte 100"), std::string::npos) << v.detail;
  // A header byte of another slot: the detail names the header.
  target[r.layout().offset(0, 5)] ^= 1;
  v = job.verify(0);
  EXPECT_EQ(v.mismatches, 2u);
  EXPECT_NE(v.detail.find("stream 0 slot 5"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("header"), std::string::npos) << v.detail;
  // Claiming more messages than were sent is caught by the headers too.
  target[r.layout().offset(0, 5)] ^= 1;
  target[r.layout().offset(1, 3) + 100] ^= 0x40;
  std::vector<uint64_t> more = job.driver_->stream_messages()[0];
  more[0] += 1;
  EXPECT_FALSE(r.verify(Operation::kWrite, more, 4096).ok);
  EXPECT_TRUE(job.verify(0).ok);
}

TEST(Traffic, CorruptedReadSourceFailsTheDriversCheck) {
  JobSetup s;
  s.op = Operation::kRead;
  s.iterations = 50;
  s.streams = 1;
  Job job(s);
  ASSERT_TRUE(job.create()) << job.error_;
  const md::Responder& r = *job.responders_[0];
  reinterpret_cast<uint8_t*>(r.target_addr())[r.layout().offset(0, 2) + 777] ^= 0x10;
  ASSERT_TRUE(job.run(100 * kMs));
  EXPECT_GT(job.driver_->verify_failures(), 0u);
  EXPECT_NE(job.driver_->first_error().find("message 2: read data differs"), std::string::npos)
      << job.driver_->first_error();
  EXPECT_NE(job.driver_->first_error().find("byte 777"), std::string::npos) << job.driver_->first_error();
  EXPECT_FALSE(job.verify(0).ok) << "the READ source slot must still hold the pattern";
}

class WrongAtomic : public ::testing::TestWithParam<Operation> {};

TEST_P(WrongAtomic, PresetCounterFailsTheDriversCheck) {
  JobSetup s;
  s.op = GetParam();
  s.sizes = {8};
  s.iterations = 40;
  Job job(s);
  ASSERT_TRUE(job.create()) << job.error_;
  const md::Responder& r = *job.responders_[0];
  const uint64_t preset = 1000;  // never an index of this job, so CMP_SWAP never recovers
  std::memcpy(reinterpret_cast<uint8_t*>(r.target_addr()) + r.layout().counter_offset(0), &preset, 8);
  ASSERT_TRUE(job.run(100 * kMs));
  EXPECT_EQ(job.driver_->completion_errors(), 0u);
  EXPECT_GT(job.driver_->verify_failures(), 0u);
  EXPECT_EQ(job.driver_->errors(), job.driver_->verify_failures());
  const std::string want = std::string("stream 0 message 0: ") + md::operation_name(s.op) + " returned 1000, want 0";
  EXPECT_NE(job.driver_->first_error().find(want), std::string::npos) << job.driver_->first_error();
  const md::VerifyResult v = job.verify(0);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("stream 0: counter is"), std::string::npos) << v.detail;
}

INSTANTIATE_TEST_SUITE_P(Traffic, WrongAtomic, ::testing::Values(Operation::kFetchAdd, Operation::kCmpSwap),
                         [](const auto& info) { return std::string(md::operation_name(info.param)); });

TEST(Traffic, RemoteErrorIsReportedAndTheJobStillFinishes) {
  JobSetup s;
  s.iterations = 100;
  Job job(s);
  std::vector<md::DriverConnection> conns = job.conns_;
  conns[0].rkey ^= 0x10000;  // another generation of the key: the responder refuses it
  ASSERT_TRUE(job.create(job.spec(), conns)) << job.error_;
  ASSERT_TRUE(job.run(200 * kMs)) << "a failed job must drain and finish";
  const md::TrafficDriver& d = *job.driver_;
  EXPECT_EQ(d.messages_done(), 0u);
  // Each stream failed its first message and flushed the rest it had posted.
  EXPECT_EQ(d.completion_errors(), 2u * s.queue_depth);
  EXPECT_EQ(d.errors(), d.completion_errors());
  EXPECT_TRUE(starts_with(d.first_error(), "connection " + std::to_string(job.pairs_[0].a) + " stream "))
      << d.first_error();
  EXPECT_NE(d.first_error().find("message 0: remote_access_error"), std::string::npos) << d.first_error();
  ASSERT_EQ(d.phases().size(), 1u);
  EXPECT_EQ(d.phases()[0].messages, 0u);
}

// The daemon prepares buffers off the worker (allocation and pattern fill take
// milliseconds for a large job) and only registers them on the worker; after a
// detach on the worker, the memory may be freed on any thread with nothing
// left registered that points into it.
TEST(Traffic, PrepareRegistersNothingAttachRegistersDetachDeregisters) {
  JobSetup s;
  s.iterations = 50;
  Job job(s);
  mt::Endpoint& b = job.h_.ep(et::kB);
  md::Responder::Spec rs;
  rs.conn = job.pairs_[0].b;
  rs.queue_depth = s.queue_depth;
  rs.max_message_bytes = 4096;
  std::string err;
  auto r = md::Responder::prepare(b, rs, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->target_rkey(), 0u) << "prepare must not touch the engine";
  ASSERT_TRUE(r->attach(&err)) << err;
  const uint32_t key = r->target_rkey();
  uint8_t* host = nullptr;
  EXPECT_EQ(b.memory().check(key, r->target_addr(), 8, mt::kAccessRemoteWrite, &host), mt::AccessCheck::kOk);
  r->detach();
  EXPECT_EQ(r->target_rkey(), 0u);
  EXPECT_NE(b.memory().check(key, r->target_addr(), 8, mt::kAccessRemoteWrite, &host), mt::AccessCheck::kOk);
  r->detach();  // idempotent
  r.reset();    // nothing registered: no engine call

  // The requester: prepared off the worker, attached, run and verified.
  auto d = md::TrafficDriver::prepare(job.h_.ep(et::kA), job.spec(), job.conns_, &err);
  ASSERT_TRUE(d) << err;
  EXPECT_FALSE(d->owns(job.pairs_[0].a)) << "owns() is set up by attach";
  ASSERT_TRUE(d->attach(&err)) << err;
  job.driver_ = std::move(d);
  ASSERT_TRUE(job.run(500 * kMs));
  EXPECT_EQ(job.driver_->errors(), 0u);
  EXPECT_TRUE(job.verify(0).ok) << job.verify(0).detail;
  job.driver_->detach();
}

// ------------------------------------------------------------------ RoCEv2

class RoceV2 : public ::testing::TestWithParam<Operation> {};

TEST_P(RoceV2, WorksAndVerifies) {
  JobSetup s;
  s.op = GetParam();
  s.rocev2 = true;
  s.streams = 1;
  s.sizes = {6000};
  s.iterations = 200;
  s.loss = 0.002;
  Job job(s);
  ASSERT_TRUE(job.create()) << job.error_;
  ASSERT_TRUE(job.run(2000 * kMs)) << job.driver_->first_error();
  expect_clean(job, 200);
}

INSTANTIATE_TEST_SUITE_P(Traffic, RoceV2,
                         ::testing::Values(Operation::kWrite, Operation::kWriteImm, Operation::kSend),
                         [](const auto& info) { return std::string(md::operation_name(info.param)); });

TEST(Traffic, RoceV2RejectsReadAndAtomicsAndStreamsWithAClearError) {
  JobSetup s;
  s.rocev2 = true;
  s.streams = 1;
  Job job(s);
  md::DriverSpec d = job.spec();
  d.op = Operation::kRead;
  EXPECT_FALSE(job.create(d, job.conns_));
  EXPECT_EQ(job.error_, "operation: read is not supported by rocev2 (supported: write, write_imm, send)");
  // The transport is the engine's to tell: prepare() (off the worker) cannot
  // know it, attach() refuses, and the driver then owns no connection.
  auto prepared = md::TrafficDriver::prepare(job.h_.ep(et::kA), d, job.conns_, &job.error_);
  ASSERT_TRUE(prepared) << job.error_;
  EXPECT_FALSE(prepared->attach(&job.error_));
  EXPECT_FALSE(prepared->owns(job.pairs_[0].a));
  d.op = Operation::kFetchAdd;
  d.sizes = {8};
  std::vector<md::DriverConnection> conns = job.conns_;
  conns[0].remote_bytes = 1 << 20;
  EXPECT_FALSE(job.create(d, conns));
  EXPECT_EQ(job.error_, "operation: fetch_add is not supported by rocev2 (supported: write, write_imm, send)");
  d = job.spec();
  d.streams = 2;
  EXPECT_FALSE(job.create(d, conns));
  EXPECT_TRUE(starts_with(job.error_, "streams: ")) << job.error_;
}

// ------------------------------------------------------------------ validation

TEST(Traffic, InvalidSpecsAreRejectedNamingTheField) {
  JobSetup s;
  Job job(s);
  const md::DriverSpec good = job.spec();
  ASSERT_TRUE(job.create(good, job.conns_)) << job.error_;

  struct Case {
    const char* what;
    std::function<void(md::DriverSpec&, std::vector<md::DriverConnection>&)> change;
    const char* field;
  };
  const Case cases[] = {
      {"size 0", [](auto& d, auto&) { d.sizes = {4096, 0}; }, "message_bytes: "},
      {"no sizes", [](auto& d, auto&) { d.sizes.clear(); }, "message_bytes: "},
      {"atomic of 16 bytes", [](auto& d, auto&) { d.op = Operation::kFetchAdd, d.sizes = {16}; }, "message_bytes: "},
      {"above max_message_bytes",
       [](auto& d, auto&) { d.sizes = {2000000}, d.max_message_bytes = 1u << 20; }, "message_bytes: 2000000 exceeds max_message_bytes 1048576"},
      {"remote region one byte short",
       [](auto& d, auto& c) { c[0].remote_bytes = md::make_layout(d.streams, d.queue_depth, 4096).bytes() - 1; },
       "remote region: "},
      {"atomics without room for the counters",
       [](auto& d, auto& c) {
         d.op = Operation::kCmpSwap, d.sizes = {8};
         c[0].remote_bytes = md::make_layout(d.streams, d.queue_depth, 8).bytes();
       },
       "remote region: "},
      {"queue depth 0", [](auto& d, auto&) { d.queue_depth = 0; }, "queue_depth: "},
      {"streams 0", [](auto& d, auto&) { d.streams = 0; }, "streams: "},
      {"neither iterations nor duration", [](auto& d, auto&) { d.iterations = 0, d.duration_ns = 0; }, "iterations: "},
      {"no connections", [](auto&, auto& c) { c.clear(); }, "connections: "},
  };
  for (const Case& c : cases) {
    md::DriverSpec d = good;
    std::vector<md::DriverConnection> conns = job.conns_;
    c.change(d, conns);
    job.error_.clear();
    EXPECT_FALSE(job.create(d, conns)) << c.what;
    EXPECT_TRUE(starts_with(job.error_, c.field)) << c.what << ": " << job.error_;
  }

  // The responder validates its own spec the same way.
  std::string err;
  md::Responder::Spec rs;
  rs.conn = job.pairs_[0].b;
  rs.queue_depth = 0;
  EXPECT_FALSE(md::Responder::create(job.h_.ep(et::kB), rs, &err));
  EXPECT_TRUE(starts_with(err, "queue_depth: ")) << err;
  rs.max_message_bytes = 64;
  rs.queue_depth = 200;  // 400 receives per stream: above the connection's receive window of 128
  rs.recv_message_bytes = 64;
  EXPECT_FALSE(md::Responder::create(job.h_.ep(et::kB), rs, &err));
  EXPECT_TRUE(starts_with(err, "queue_depth: ")) << err;
}

}  // namespace
