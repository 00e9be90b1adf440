// Ordering between requests on one stream that the responder executes (as an
// RC QP does): a READ or an atomic posted after a WRITE to the same memory on
// the same stream observes that WRITE. Data may be placed out of order, but
// an operation whose result the requester sees must not overtake earlier
// messages of its stream. (Regression: at 13ebe41 rx_data executed READs and
// atomics on arrival; ReadAfterWriteSeesTheWriteClean failed even without loss.)
#include "harness.h"

namespace engine_test {
namespace {

constexpr uint32_t kPairs = 40;
constexpr uint32_t kLen = 16 * 1024;


void write_then_read(const Impairment& imp, uint64_t seed) {
  Harness h(uniform_planes(kPlanes, make_link(25e9, 2 * kUs, imp)), seed);
  const ConnPair conn = h.connect_metaroce(kPlanes, 1, [](mt::ConnectionConfig& c) {
    c.max_outstanding_per_stream = 128;
    c.recv_window_messages = 128;
  });
  Buffer& src = h.alloc(kA, kPairs * kLen, mt::kAccessLocalWrite, "src");
  Buffer& x = h.alloc(kB, kPairs * kLen, mt::kAccessRemoteWrite | mt::kAccessRemoteRead, "x");  // 0xEE
  Buffer& y = h.alloc(kA, kPairs * kLen, mt::kAccessLocalWrite, "y");
  src.set_pattern(0, src.len, 1234);
  x.expect_bytes(0, src.data(), src.len);
  y.expect_bytes(0, src.data(), src.len);
  uint64_t id = 1;
  for (uint32_t i = 0; i < kPairs; ++i) {
    mt::WorkRequest w;
    w.wr_id = id++;
    w.verb = Verb::kWrite;
    w.local_addr = src.addr(i * kLen);
    w.lkey = src.key;
    w.length = kLen;
    w.remote_addr = x.addr(i * kLen);
    w.rkey = x.key;
    ASSERT_EQ(h.post(kA, conn.a, 0, w), PostError::kOk);
    mt::WorkRequest r = w;
    r.wr_id = id++;
    r.verb = Verb::kRead;
    r.local_addr = y.addr(i * kLen);
    r.lkey = y.key;
    ASSERT_EQ(h.post(kA, conn.a, 0, r), PostError::kOk);
  }
  ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() == 2 * kPairs; }, 200 * kMs));
  for (size_t i = 0; i < h.completions(kA).size(); ++i) {
    const Completion& c = h.completions(kA)[i];
    EXPECT_EQ(c.wr_id, i + 1) << "post order";
    EXPECT_EQ(c.status, WcStatus::kSuccess) << describe(c);
  }
  uint32_t stale = 0;
  for (uint32_t i = 0; i < kPairs; ++i)
    if (std::memcmp(y.data() + i * kLen, src.data() + i * kLen, kLen) != 0) ++stale;
  EXPECT_EQ(stale, 0u) << stale << " of " << kPairs << " READs did not observe the WRITE posted before them";
  EXPECT_TRUE(x.verify());
}

TEST(StreamOrder, ReadAfterWriteSeesTheWriteClean) { write_then_read({}, 1); }
TEST(StreamOrder, ReadAfterWriteSeesTheWriteUnderLoss) { write_then_read({.loss = 0.05}, 2); }

void write_then_fetch_add(const Impairment& imp, uint64_t seed) {
  Harness h(uniform_planes(kPlanes, make_link(25e9, 2 * kUs, imp)), seed);
  const ConnPair conn = h.connect_metaroce(kPlanes, 1);
  constexpr uint32_t kN = 30;
  Buffer& vals = h.alloc(kA, kN * 8, mt::kAccessLocalWrite, "values");
  Buffer& words = h.alloc(kB, kN * 8, mt::kAccessRemoteWrite | mt::kAccessRemoteAtomic, "words", 0);
  Buffer& res = h.alloc(kA, kN * 8, mt::kAccessLocalWrite, "results");
  uint64_t id = 1;
  for (uint32_t i = 0; i < kN; ++i) {
    const uint64_t v = 1000 + 17 * i;
    vals.set_u64(i * 8, v);
    mt::WorkRequest w;
    w.wr_id = id++;
    w.verb = Verb::kWrite;
    w.local_addr = vals.addr(i * 8);
    w.lkey = vals.key;
    w.length = 8;
    w.remote_addr = words.addr(i * 8);
    w.rkey = words.key;
    ASSERT_EQ(h.post(kA, conn.a, 0, w), PostError::kOk);
    mt::WorkRequest f = w;
    f.wr_id = id++;
    f.verb = Verb::kFetchAdd;
    f.local_addr = res.addr(i * 8);
    f.lkey = res.key;
    f.compare_add = 1;
    ASSERT_EQ(h.post(kA, conn.a, 0, f), PostError::kOk);
  }
  ASSERT_TRUE(h.run_until([&] { return h.completions(kA).size() == 2 * kN; }, 200 * kMs));
  for (const Completion& c : h.completions(kA)) EXPECT_EQ(c.status, WcStatus::kSuccess) << describe(c);
  uint32_t bad = 0;
  for (uint32_t i = 0; i < kN; ++i) {
    const uint64_t v = 1000 + 17 * i;
    bad += res.u64(i * 8) != v || words.u64(i * 8) != v + 1;
  }
  EXPECT_EQ(bad, 0u) << bad << " of " << kN << " FETCH_ADDs overtook the WRITE posted before them";
}

TEST(StreamOrder, FetchAddAfterWriteSeesTheWriteClean) { write_then_fetch_add({}, 3); }
TEST(StreamOrder, FetchAddAfterWriteSeesTheWriteUnderLoss) { write_then_fetch_add({.loss = 0.05}, 4); }

}  // namespace
}  // namespace engine_test
