// Reusable fixture for engine tests: two endpoints (A = host 0, B = host 1)
// joined by P planes of emulated links (configurable per plane and direction),
// one deterministic Simulator, guarded memory buffers with a shadow copy of
// their expected contents, connection helpers (MetaRoCE with N paths, RoCEv2),
// posting helpers that wake the simulator, bounded runs (a predicate or a
// virtual-time limit: a test fails, it never hangs) and completion collection
// from both endpoints.
//
// Everything is seeded; there is no wall clock, no sleep and no thread.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "metaroce/emulator/link.h"
#include "metaroce/emulator/random.h"
#include "metaroce/sim/simulator.h"
#include "metaroce/transport/endpoint.h"
#include "metaroce/transport/types.h"
#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/udp_frame.h"
#include "forge_frame.h"

namespace engine_test {

namespace mt = metaroce::transport;
namespace me = metaroce::emulator;
namespace ms = metaroce::sim;
namespace mw = metaroce::wire;

using mt::Completion;
using mt::Nanos;
using mt::PostError;
using mt::Verb;
using mt::WcStatus;

inline constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;  // simulated only
inline const mw::MacAddr kMacA{0x02, 0, 0, 0, 0, 1}, kMacB{0x02, 0, 0, 0, 0, 2};

enum Side : int { kA = 0, kB = 1 };
inline const char* side_name(Side s) { return s == kA ? "A" : "B"; }

inline constexpr Nanos kUs = 1000;
inline constexpr Nanos kMs = 1000 * kUs;

// The planes of a MetaRoCE test fabric, unless a test needs another count.
inline constexpr size_t kPlanes = 4;
// Message sizes around the page and MTU edges, up to 1 MiB.
inline constexpr uint32_t kSizes[] = {1, 4095, 4096, 4097, 64 * 1024, 1024 * 1024};

// ------------------------------------------------------------------ links

struct Impairment {
  double loss = 0, duplicate = 0, reorder = 0, corrupt = 0;
  Nanos reorder_delay_ns = 0;
};

inline me::LinkConfig make_link(double rate_bps = 25e9, Nanos delay_ns = 2000, const Impairment& imp = {}) {
  me::LinkConfig l;
  l.rate_bps = rate_bps;
  l.prop_delay_ns = delay_ns;
  l.queue_limit_bytes = 4u << 20;
  l.ecn_threshold_bytes = 256 * 1024;
  l.loss_probability = imp.loss;
  l.duplicate_probability = imp.duplicate;
  l.reorder_probability = imp.reorder;
  l.reorder_delay_ns = imp.reorder_delay_ns;
  l.corrupt_probability = imp.corrupt;
  return l;
}

using PlaneConfig = ms::TwoHostFabric::PlaneConfig;

// n planes, the same link in both directions on every plane.
inline std::vector<PlaneConfig> uniform_planes(size_t n, const me::LinkConfig& l = make_link()) {
  return std::vector<PlaneConfig>(n, PlaneConfig{l, l});
}

// ------------------------------------------------------------------ verbs helpers

inline bool is_atomic(Verb v) { return v == Verb::kFetchAdd || v == Verb::kCmpSwap; }
inline bool produces_recv(Verb v) { return v == Verb::kSend || v == Verb::kSendImm || v == Verb::kWriteImm; }
inline bool consumes_recv(Verb v) { return v == Verb::kSend || v == Verb::kSendImm; }
inline bool has_imm(Verb v) { return v == Verb::kSendImm || v == Verb::kWriteImm; }

inline std::string describe(const Completion& c) {
  std::ostringstream o;
  o << "{wr_id=" << c.wr_id << " conn=" << c.conn << " stream=" << c.stream << " verb=" << mt::verb_name(c.verb)
    << " status=" << mt::wc_status_name(c.status) << " byte_len=" << c.byte_len;
  if (c.verb == Verb::kRecv) o << " remote_verb=" << mt::verb_name(c.remote_verb);
  if (c.has_imm) o << " imm=" << c.imm;
  o << "}";
  return o.str();
}

// Deterministic content: xorshift64 stream from a seed.
inline void fill_pattern(uint8_t* p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x1234567;
  if (x == 0) x = 1;
  for (size_t i = 0; i < n; ++i) {
    if ((i & 7) == 0) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    p[i] = static_cast<uint8_t>(x >> ((i & 7) * 8));
  }
}

// ------------------------------------------------------------------ memory

inline constexpr uint8_t kGuardByte = 0xA5;

// A registered buffer with guard bytes on both sides (outside the region) and
// a shadow copy of what every byte (guards included) is expected to hold.
struct Buffer {
  Side side = kA;
  std::string name;
  std::unique_ptr<uint8_t[]> raw;
  size_t guard = 0, len = 0;
  uint32_t key = 0;
  uint32_t access = 0;
  std::vector<uint8_t> expect;  // raw size: guard + len + guard

  uint8_t* data() const { return raw.get() + guard; }
  uint64_t addr(size_t off = 0) const { return reinterpret_cast<uint64_t>(data() + off); }
  size_t raw_size() const { return guard * 2 + len; }

  // Sets region bytes [off, off+n) to src and expects exactly that.
  void set(size_t off, const uint8_t* src, size_t n) {
    std::memcpy(data() + off, src, n);
    std::memcpy(expect.data() + guard + off, src, n);
  }
  void set_pattern(size_t off, size_t n, uint64_t seed) {
    fill_pattern(data() + off, n, seed);
    std::memcpy(expect.data() + guard + off, data() + off, n);
  }
  // Declares what [off, off+n) must hold after the test's traffic.
  void expect_bytes(size_t off, const uint8_t* src, size_t n) { std::memcpy(expect.data() + guard + off, src, n); }
  void expect_u64(size_t off, uint64_t v) { expect_bytes(off, reinterpret_cast<const uint8_t*>(&v), 8); }
  uint64_t u64(size_t off) const {
    uint64_t v;
    std::memcpy(&v, data() + off, 8);
    return v;
  }
  void set_u64(size_t off, uint64_t v) { set(off, reinterpret_cast<const uint8_t*>(&v), 8); }

  // Byte-for-byte comparison of the whole allocation (guards included).
  ::testing::AssertionResult verify() const {
    const uint8_t* r = raw.get();
    size_t bad = 0, first = SIZE_MAX, last = 0;
    for (size_t i = 0; i < raw_size(); ++i)
      if (r[i] != expect[i]) {
        ++bad;
        first = std::min(first, i);
        last = i;
      }
    if (bad == 0) return ::testing::AssertionSuccess();
    auto where = [&](size_t i) {
      std::ostringstream o;
      if (i < guard) o << "front guard[-" << (guard - i) << "]";
      else if (i >= guard + len) o << "back guard[+" << (i - guard - len) << "]";
      else o << "offset " << (i - guard);
      o << " (got 0x" << std::hex << int(r[i]) << ", want 0x" << int(expect[i]) << ")";
      return o.str();
    };
    return ::testing::AssertionFailure() << "buffer '" << name << "' on " << side_name(side) << " (len " << len
                                         << "): " << bad << " byte(s) differ, first at " << where(first)
                                         << ", last at " << where(last);
  }
};

// ------------------------------------------------------------------ harness

struct ConnPair {
  uint32_t a = 0, b = 0;  // local connection ids on A and on B
};

class Harness {
 public:
  explicit Harness(std::vector<PlaneConfig> planes, uint64_t seed = 1,
                   uint32_t nic_queue_bytes = me::kNicQueueBytes)
      : planes_(std::move(planes)),
        fabric_(planes_, seed, nic_queue_bytes),
        sim_(fabric_),
        a_(endpoint_config(kIpA, kMacA)),
        b_(endpoint_config(kIpB, kMacB)) {
    sim_.add_host(&a_);
    sim_.add_host(&b_);
    sim_.on_host_activity([this](int h) { drain(static_cast<Side>(h)); });
  }
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  mt::Endpoint& ep(Side s) { return s == kA ? a_ : b_; }
  ms::Simulator& sim() { return sim_; }
  ms::TwoHostFabric& fabric() { return fabric_; }
  size_t planes() const { return planes_.size(); }
  Nanos now() const { return sim_.now(); }

  // ---------------------------------------------------------------- memory

  // Allocates len bytes (all set to fill) between guards of `guard` bytes and
  // registers exactly the len bytes with `access`.
  Buffer& alloc(Side side, size_t len, uint32_t access, std::string name, uint8_t fill = 0xEE, size_t guard = 64) {
    auto b = std::make_unique<Buffer>();
    b->side = side;
    b->name = std::move(name);
    b->guard = guard;
    b->len = len;
    b->access = access;
    b->raw.reset(new uint8_t[b->raw_size()]);
    std::memset(b->raw.get(), kGuardByte, b->raw_size());
    std::memset(b->data(), fill, len);
    b->expect.assign(b->raw.get(), b->raw.get() + b->raw_size());
    auto key = ep(side).register_memory(b->data(), len, access);
    EXPECT_TRUE(key.has_value()) << "register_memory failed for " << b->name;
    b->key = key.value_or(0);
    buffers_.push_back(std::move(b));
    return *buffers_.back();
  }

  ::testing::AssertionResult verify_all() const {
    for (const auto& b : buffers_)
      if (auto r = b->verify(); !r) return r;
    return ::testing::AssertionSuccess();
  }

  // ---------------------------------------------------------------- connections

  static mt::ConnectionConfig base_config(mt::TransportKind kind, uint32_t a_id, uint32_t b_id) {
    mt::ConnectionConfig c;
    c.transport = kind;
    c.local_id = a_id;
    c.remote_id = b_id;
    c.peer_ip = kIpB;
    c.peer_mac = kMacB;
    return c;
  }

  // Creates the pair from A's view of the config (B's is mirrored: ids and peer swapped).
  ConnPair connect(const mt::ConnectionConfig& ca) {
    mt::ConnectionConfig cb = ca;
    std::swap(cb.local_id, cb.remote_id);
    cb.peer_ip = kIpA;
    cb.peer_mac = kMacA;
    std::string err;
    ConnPair p;
    auto ia = a_.create_connection(ca, &err);
    EXPECT_TRUE(ia.has_value()) << "A create_connection: " << err;
    auto ib = b_.create_connection(cb, &err);
    EXPECT_TRUE(ib.has_value()) << "B create_connection: " << err;
    p.a = ia.value_or(0);
    p.b = ib.value_or(0);
    return p;
  }

  // MetaRoCE with `paths` paths spread round-robin over the planes.
  ConnPair connect_metaroce(size_t paths, uint16_t streams,
                            const std::function<void(mt::ConnectionConfig&)>& tweak = {}) {
    mt::ConnectionConfig c = base_config(mt::TransportKind::kMetaRoCE, next_id_, next_id_ + 0x1000);
    ++next_id_;
    for (size_t i = 0; i < paths; ++i)
      c.paths.push_back({static_cast<uint8_t>(i % planes_.size()), static_cast<uint16_t>(49152 + i * 97)});
    c.streams = streams;
    if (tweak) tweak(c);
    return connect(c);
  }

  ConnPair connect_rocev2(uint8_t plane, const std::function<void(mt::ConnectionConfig&)>& tweak = {}) {
    mt::ConnectionConfig c = base_config(mt::TransportKind::kRoCEv2, next_id_, next_id_ + 0x1000);
    ++next_id_;
    c.paths.push_back({plane, static_cast<uint16_t>(49152 + plane * 97)});
    c.streams = 1;
    if (tweak) tweak(c);
    return connect(c);
  }

  // ---------------------------------------------------------------- posting

  PostError post(Side s, uint32_t conn, uint16_t stream, const mt::WorkRequest& wr) {
    const PostError e = ep(s).post(conn, stream, wr);
    sim_.kick(s);
    return e;
  }
  PostError post_recv(Side s, uint32_t conn, uint16_t stream, const mt::RecvRequest& rr) {
    const PostError e = ep(s).post_recv(conn, stream, rr);
    sim_.kick(s);
    return e;
  }

  // ---------------------------------------------------------------- completions

  // Called for every completion as it is polled (after it is appended to
  // completions(side)), in registration order.
  void add_listener(std::function<void(Side, const Completion&)> fn) { listeners_.push_back(std::move(fn)); }

  const std::vector<Completion>& completions(Side s) const { return comps_[s]; }

  void drain(Side s) {
    Completion wc[64];
    size_t n;
    while ((n = ep(s).poll_completions(wc)) > 0)
      for (size_t i = 0; i < n; ++i) {
        comps_[s].push_back(wc[i]);
        for (auto& fn : listeners_) fn(s, wc[i]);
      }
  }
  void drain() {
    drain(kA);
    drain(kB);
  }

  // ---------------------------------------------------------------- running

  // Advances virtual time in steps until pred() holds (true) or `bound` of
  // virtual time has passed from now (false). Never loops forever.
  bool run_until(const std::function<bool()>& pred, Nanos bound, Nanos step = 1 * kUs) {
    const Nanos end = sim_.now() + bound;
    drain();
    while (!pred()) {
      if (sim_.now() >= end) return false;
      sim_.run_until(std::min(end, sim_.now() + step));
      drain();
    }
    return true;
  }
  void run_for(Nanos d) {
    sim_.run_until(sim_.now() + d);
    drain();
  }

 private:
  static mt::EndpointConfig endpoint_config(uint32_t ip, const mw::MacAddr& mac) {
    mt::EndpointConfig e;
    e.ip = ip;
    e.mac = mac;
    return e;
  }

  std::vector<PlaneConfig> planes_;
  ms::TwoHostFabric fabric_;
  ms::Simulator sim_;
  mt::Endpoint a_, b_;
  std::deque<std::unique_ptr<Buffer>> buffers_;
  std::vector<Completion> comps_[2];
  std::vector<std::function<void(Side, const Completion&)>> listeners_;
  uint32_t next_id_ = 1;
};

// ------------------------------------------------------------------ frames

// A frame emitted by an endpoint, decoded.
struct SentFrame {
  std::vector<uint8_t> bytes;
  uint8_t plane = 0;
  std::optional<mw::UdpFrameView> udp;  // views point into bytes
  bool metaroce = false;
  mw::DecodeError err = mw::DecodeError::kNone;
  mw::PacketView pkt{};
};

// Calls poll_tx on ep until it yields nothing more (bounded) and decodes every frame.
inline std::vector<std::unique_ptr<SentFrame>> collect_tx(mt::Endpoint& ep, Nanos now, uint64_t ready = ~0ull) {
  std::vector<std::unique_ptr<SentFrame>> out;
  for (int round = 0; round < 64; ++round) {
    constexpr size_t kBurst = 16;
    std::vector<std::vector<uint8_t>> bufs(kBurst, std::vector<uint8_t>(mw::kMaxFrameBytes));
    mt::TxFrame burst[kBurst];
    for (size_t i = 0; i < kBurst; ++i) burst[i] = {bufs[i].data(), static_cast<uint32_t>(bufs[i].size()), 0, 0};
    const size_t n = ep.poll_tx({burst, kBurst}, ready, now);
    for (size_t i = 0; i < n; ++i) {
      auto s = std::make_unique<SentFrame>();
      s->bytes.assign(bufs[i].begin(), bufs[i].begin() + burst[i].len);
      s->plane = burst[i].plane;
      s->udp = mw::decode_udp_frame(s->bytes);
      if (s->udp && s->udp->flow.dst_port == mw::kDefaultUdpPort) {
        s->metaroce = true;
        s->err = mw::decode_packet(s->udp->payload, s->pkt);
      }
      out.push_back(std::move(s));
    }
    if (n < kBurst) break;
  }
  return out;
}

// ------------------------------------------------------------------ traffic

// A verb-level traffic generator and checker on one connection (the
// requester side, A by default, requests; the other side responds): every operation gets its own guarded buffers; posting keeps at
// most `depth` requests outstanding per stream; at the end check() verifies
// requester completions (post order per stream, status, byte_len), responder
// receive completions (msg order per stream, byte_len, imm, wr_id,
// remote_verb), the data byte for byte and every guard.
class Traffic {
 public:
  struct Op {
    Verb verb = Verb::kWrite;
    uint16_t stream = 0;
    uint32_t len = 0;
    uint32_t imm = 0;
    uint64_t wr_id = 0;
    uint64_t recv_wr_id = 0;
    Buffer* local = nullptr;   // on A: source (write/send) or destination (read/atomic result)
    Buffer* remote = nullptr;  // on B: target (write), receive buffer (send), source (read)
    size_t remote_off = 0;     // where in `remote` the operation lands/reads
    // Atomics.
    size_t counter = 0;        // index into counters_
    uint64_t operand = 0, compare = 0;
    bool posted = false, completed = false;
    Completion wc{};
    Nanos completed_at = -1;
  };

  // Slack bytes inside the registered target region around each target range:
  // a write that strays, even inside the region, is detected.
  static constexpr size_t kSlack = 32;

  Traffic(Harness& h, ConnPair conn, uint16_t streams, uint32_t depth, Side requester = kA)
      : h_(h),
        req_(requester),
        rsp_(requester == kA ? kB : kA),
        req_conn_(requester == kA ? conn.a : conn.b),
        rsp_conn_(requester == kA ? conn.b : conn.a),
        depth_(depth),
        per_stream_(streams) {}

  // Adds one operation (ops are posted in the order they were added, per stream).
  Op& add(Verb verb, uint16_t stream, uint32_t len, uint32_t imm = 0) {
    ops_.push_back(std::make_unique<Op>());
    Op& op = *ops_.back();
    op.verb = verb;
    op.stream = stream;
    op.len = is_atomic(verb) ? 8 : len;
    op.imm = imm;
    op.wr_id = 0x1000000ull * (stream + 1) + ops_.size();
    const std::string tag = std::string(mt::verb_name(verb)) + "#" + std::to_string(ops_.size());
    const uint64_t seed = 0xC0FFEEull + ops_.size() * 7919;
    switch (verb) {
      case Verb::kWrite:
      case Verb::kWriteImm: {
        op.local = &alloc(req_, len, mt::kAccessLocalWrite, tag + ".src");
        op.local->set_pattern(0, len, seed);
        op.remote = &alloc(rsp_, len + 2 * kSlack, mt::kAccessLocalWrite | mt::kAccessRemoteWrite, tag + ".dst");
        op.remote_off = kSlack;
        op.remote->expect_bytes(kSlack, op.local->data(), len);
        break;
      }
      case Verb::kSend:
      case Verb::kSendImm: {
        op.local = &alloc(req_, len, mt::kAccessLocalWrite, tag + ".src");
        op.local->set_pattern(0, len, seed);
        // The receive is larger than the message: bytes past len stay untouched.
        op.remote = &alloc(rsp_, len + kSlack, mt::kAccessLocalWrite, tag + ".recv");
        op.remote_off = 0;
        op.remote->expect_bytes(0, op.local->data(), len);
        op.recv_wr_id = 0x77000000ull + ops_.size();
        break;
      }
      case Verb::kRead: {
        op.remote = &alloc(rsp_, len + 2 * kSlack, mt::kAccessRemoteRead, tag + ".src");
        op.remote->set_pattern(0, len + 2 * kSlack, seed);
        op.remote_off = kSlack;
        op.local = &alloc(req_, len, mt::kAccessLocalWrite, tag + ".dst");
        op.local->expect_bytes(0, op.remote->data() + kSlack, len);
        break;
      }
      case Verb::kFetchAdd:
      case Verb::kCmpSwap: {
        op.local = &alloc(req_, 8, mt::kAccessLocalWrite, tag + ".result", 0xEE);
        break;
      }
      case Verb::kRecv: ADD_FAILURE() << "kRecv is not a request"; break;
    }
    per_stream_.at(stream).ops.push_back(&op);
    return op;
  }

  // A shared 8-byte atomic target on B (initial value v) for fetch-add ops.
  size_t add_counter(uint64_t initial) {
    Buffer& b = alloc(rsp_, 64, mt::kAccessRemoteAtomic | mt::kAccessRemoteRead, "counter" +
                                                                                      std::to_string(counters_.size()));
    b.set_u64(8, initial);  // 8-byte aligned inside the region, neighbours must stay untouched
    counters_.push_back({&b, initial});
    return counters_.size() - 1;
  }
  Op& add_fetch_add(uint16_t stream, size_t counter, uint64_t addend) {
    Op& op = add(Verb::kFetchAdd, stream, 8);
    op.counter = counter;
    op.operand = addend;
    return op;
  }
  Op& add_cmp_swap(uint16_t stream, size_t counter, uint64_t compare, uint64_t swap) {
    Op& op = add(Verb::kCmpSwap, stream, 8);
    op.counter = counter;
    op.compare = compare;
    op.operand = swap;
    return op;
  }

  // Posts receives for every SEND in stream order (unless deferred: then the
  // test calls post_receives() itself), then the first requests.
  bool defer_receives = false;
  void start() {
    if (!defer_receives) post_receives();
    if (!listening_) h_.add_listener([this](Side s, const Completion& c) { on_completion(s, c); });
    listening_ = true;
    pump();
  }
  void post_receives() {
    for (auto& st : per_stream_)
      for (Op* op : st.ops)
        if (consumes_recv(op->verb)) {
          mt::RecvRequest rr;
          rr.wr_id = op->recv_wr_id;
          rr.addr = op->remote->addr();
          rr.lkey = op->remote->key;
          rr.length = static_cast<uint32_t>(op->remote->len);
          EXPECT_EQ(h_.post_recv(rsp_, rsp_conn_, op->stream, rr), PostError::kOk);
        }
  }

  bool done() const { return completed_ == ops_.size() && recv_seen_ == expected_recvs(); }
  size_t completed() const { return completed_; }
  size_t total() const { return ops_.size(); }
  size_t expected_recvs() const {
    size_t n = 0;
    for (const auto& op : ops_) n += produces_recv(op->verb);
    return n;
  }

  // Everything a test checks once done() holds.
  void check() {
    EXPECT_EQ(completed_, ops_.size()) << "requester completions missing";
    // Requester completions: post order per stream, success, right length.
    for (size_t s = 0; s < per_stream_.size(); ++s) {
      const auto& st = per_stream_[s];
      ASSERT_EQ(st.completions.size(), st.ops.size()) << "stream " << s;
      for (size_t i = 0; i < st.ops.size(); ++i) {
        const Op& op = *st.ops[i];
        const Completion& c = st.completions[i];
        EXPECT_EQ(c.wr_id, op.wr_id) << "stream " << s << " completion #" << i << " out of post order: " << describe(c);
        EXPECT_EQ(c.status, WcStatus::kSuccess) << "stream " << s << " #" << i << ": " << describe(c);
        EXPECT_EQ(c.verb, op.verb) << describe(c);
        EXPECT_EQ(c.conn, req_conn_);
        EXPECT_EQ(c.stream, s);
        EXPECT_EQ(c.byte_len, op.len) << describe(c);
      }
      // Receive completions on B: in msg order per stream.
      std::vector<const Op*> want;
      for (const Op* op : st.ops)
        if (produces_recv(op->verb)) want.push_back(op);
      ASSERT_EQ(st.recvs.size(), want.size()) << "stream " << s << " receive completions";
      for (size_t i = 0; i < want.size(); ++i) {
        const Op& op = *want[i];
        const Completion& c = st.recvs[i];
        EXPECT_EQ(c.verb, Verb::kRecv);
        EXPECT_EQ(c.status, WcStatus::kSuccess) << describe(c);
        EXPECT_EQ(c.conn, rsp_conn_);
        EXPECT_EQ(c.remote_verb, op.verb) << "stream " << s << " recv #" << i << ": " << describe(c);
        EXPECT_EQ(c.byte_len, op.len) << "stream " << s << " recv #" << i << ": " << describe(c);
        EXPECT_EQ(c.has_imm, has_imm(op.verb)) << describe(c);
        if (has_imm(op.verb)) {
          EXPECT_EQ(c.imm, op.imm) << describe(c);
        }
        if (consumes_recv(op.verb)) {
          EXPECT_EQ(c.wr_id, op.recv_wr_id) << describe(c);
        }
      }
    }
    check_atomics();
    for (const Buffer* b : mine_) EXPECT_TRUE(b->verify());
  }

  const std::vector<std::unique_ptr<Op>>& ops() const { return ops_; }
  // Called after each requester completion was recorded (e.g. fault injection).
  std::function<void()> after_completion;

 private:
  struct PerStream {
    std::vector<Op*> ops;
    size_t next_post = 0, next_complete = 0;
    std::vector<Completion> completions;
    std::vector<Completion> recvs;
  };
  struct Counter {
    Buffer* buf;
    uint64_t initial;
  };

  template <typename... Args>
  Buffer& alloc(Args&&... args) {
    Buffer& b = h_.alloc(std::forward<Args>(args)...);
    mine_.push_back(&b);
    return b;
  }

  void pump() {
    for (size_t s = 0; s < per_stream_.size(); ++s) {
      PerStream& st = per_stream_[s];
      while (st.next_post < st.ops.size() && st.next_post - st.completions.size() < depth_) {
        Op& op = *st.ops[st.next_post];
        mt::WorkRequest wr;
        wr.wr_id = op.wr_id;
        wr.verb = op.verb;
        wr.local_addr = op.local->addr();
        wr.lkey = op.local->key;
        wr.length = op.len;
        wr.imm = op.imm;
        if (is_atomic(op.verb)) {
          const Counter& c = counters_.at(op.counter);
          wr.remote_addr = c.buf->addr(8);
          wr.rkey = c.buf->key;
          wr.compare_add = op.verb == Verb::kFetchAdd ? op.operand : op.compare;
          wr.swap = op.verb == Verb::kCmpSwap ? op.operand : 0;
        } else if (!consumes_recv(op.verb)) {
          wr.remote_addr = op.remote->addr(op.remote_off);
          wr.rkey = op.remote->key;
        }
        const PostError e = h_.post(req_, req_conn_, static_cast<uint16_t>(s), wr);
        if (e != PostError::kOk) {
          ADD_FAILURE() << "post " << mt::verb_name(op.verb) << " len " << op.len << " on stream " << s << ": "
                        << mt::post_error_name(e);
          return;
        }
        op.posted = true;
        ++st.next_post;
      }
    }
  }

  void on_completion(Side side, const Completion& c) {
    const bool mine_recv = side == rsp_ && c.conn == rsp_conn_ && c.verb == Verb::kRecv;
    const bool mine_req = side == req_ && c.conn == req_conn_ && c.verb != Verb::kRecv;
    if (!mine_recv && !mine_req) return;  // another traffic's completion
    if (mine_recv) {
      if (c.stream < per_stream_.size()) per_stream_[c.stream].recvs.push_back(c);
      else ADD_FAILURE() << "receive completion on unknown stream: " << describe(c);
      ++recv_seen_;
      return;
    }
    if (c.stream >= per_stream_.size()) {
      ADD_FAILURE() << "completion on unknown stream: " << describe(c);
      return;
    }
    PerStream& st = per_stream_[c.stream];
    st.completions.push_back(c);
    for (Op* op : st.ops)
      if (op->wr_id == c.wr_id) {
        if (op->completed) ADD_FAILURE() << "completed twice: " << describe(c);
        op->completed = true;
        op->wc = c;
        op->completed_at = h_.now();
      }
    ++completed_;
    pump();
    if (after_completion) after_completion();
  }

  // Atomics: per counter, the ops' returned originals must describe one serial
  // execution in which every op ran exactly once; the counter holds its result.
  void check_atomics() {
    for (size_t ci = 0; ci < counters_.size(); ++ci) {
      std::vector<Op*> ops;
      for (auto& op : ops_)
        if (is_atomic(op->verb) && op->counter == ci) ops.push_back(op.get());
      if (ops.empty()) continue;
      // Reconstruct the serial order: each op's original is the value its
      // predecessor left. Greedy: from the initial value, find an op whose
      // original matches; for ties (a CMP_SWAP that failed leaves the value
      // unchanged) prefer those that do not change the value.
      uint64_t v = counters_[ci].initial;
      std::vector<bool> used(ops.size(), false);
      for (size_t step = 0; step < ops.size(); ++step) {
        int pick = -1;
        for (size_t i = 0; i < ops.size() && pick < 0; ++i)
          if (!used[i] && ops[i]->local->u64(0) == v && next_value(*ops[i], v) == v) pick = static_cast<int>(i);
        for (size_t i = 0; i < ops.size() && pick < 0; ++i)
          if (!used[i] && ops[i]->local->u64(0) == v) pick = static_cast<int>(i);
        if (pick < 0) {
          ADD_FAILURE() << "counter " << ci << ": no atomic returned original " << v << " (after " << step
                        << " ops): the ops do not form one exactly-once serial execution";
          return;
        }
        used[pick] = true;
        v = next_value(*ops[pick], v);
        ops[pick]->local->expect_u64(0, ops[pick]->local->u64(0));  // validated: now expected
      }
      EXPECT_EQ(counters_[ci].buf->u64(8), v) << "counter " << ci << " final value";
      counters_[ci].buf->expect_u64(8, v);
    }
  }
  static uint64_t next_value(const Op& op, uint64_t v) {
    if (op.verb == Verb::kFetchAdd) return v + op.operand;
    return v == op.compare ? op.operand : v;
  }

  Harness& h_;
  Side req_, rsp_;
  uint32_t req_conn_, rsp_conn_;
  bool listening_ = false;
  uint32_t depth_;
  std::vector<PerStream> per_stream_;
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<Counter> counters_;
  std::vector<const Buffer*> mine_;
  size_t completed_ = 0, recv_seen_ = 0;
};

// ------------------------------------------------------------------ streaming writer

// Keeps `depth` WRITEs of msg_bytes outstanding per stream, each with fresh
// content; on completion the destination must equal the source byte for byte
// (then it is scribbled over). For long-running path-health tests.
class StreamingWriter {
 public:
  StreamingWriter(Harness& h, ConnPair conn, uint16_t streams, uint32_t depth, uint32_t msg_bytes)
      : h_(h), conn_(conn), depth_(depth), msg_(msg_bytes) {
    for (uint16_t s = 0; s < streams; ++s) {
      Lane l;
      l.stream = s;
      l.src = &h_.alloc(kA, static_cast<size_t>(depth) * msg_bytes, mt::kAccessLocalWrite, "sw.src" + std::to_string(s));
      l.dst = &h_.alloc(kB, static_cast<size_t>(depth) * msg_bytes, mt::kAccessRemoteWrite | mt::kAccessLocalWrite,
                        "sw.dst" + std::to_string(s));
      l.slot_id.assign(depth, 0);
      lanes_.push_back(l);
    }
  }

  void start() {
    h_.add_listener([this](Side s, const Completion& c) {
      if (s == kA && c.conn == conn_.a && c.verb == Verb::kWrite) on_completion(c);
    });
    for (Lane& l : lanes_)
      for (uint32_t i = 0; i < depth_; ++i) post(l, i);
  }
  void stop() { stopped_ = true; }

  uint64_t bytes() const { return bytes_; }
  uint64_t messages() const { return messages_; }
  uint64_t errors() const { return errors_; }
  uint64_t verify_failures() const { return verify_failures_; }
  size_t outstanding() const { return outstanding_; }

 private:
  struct Lane {
    uint16_t stream = 0;
    Buffer* src = nullptr;
    Buffer* dst = nullptr;
    std::vector<uint64_t> slot_id;
  };

  void post(Lane& l, uint32_t slot) {
    const uint64_t id = ++next_id_;
    l.slot_id[slot] = id;
    l.src->set_pattern(static_cast<size_t>(slot) * msg_, msg_, id);
    mt::WorkRequest wr;
    wr.wr_id = (static_cast<uint64_t>(l.stream) << 32) | slot;
    wr.verb = Verb::kWrite;
    wr.local_addr = l.src->addr(static_cast<size_t>(slot) * msg_);
    wr.lkey = l.src->key;
    wr.length = msg_;
    wr.remote_addr = l.dst->addr(static_cast<size_t>(slot) * msg_);
    wr.rkey = l.dst->key;
    const PostError e = h_.post(kA, conn_.a, l.stream, wr);
    if (e != PostError::kOk) {
      ++errors_;
      return;
    }
    ++outstanding_;
  }

  void on_completion(const Completion& c) {
    --outstanding_;
    const uint16_t s = static_cast<uint16_t>(c.wr_id >> 32);
    const uint32_t slot = static_cast<uint32_t>(c.wr_id);
    if (s >= lanes_.size() || slot >= depth_ || c.status != WcStatus::kSuccess) {
      ++errors_;
      return;
    }
    Lane& l = lanes_[s];
    uint8_t* dst = l.dst->data() + static_cast<size_t>(slot) * msg_;
    const uint8_t* src = l.src->data() + static_cast<size_t>(slot) * msg_;
    if (std::memcmp(dst, src, msg_) != 0) ++verify_failures_;
    std::memset(dst, 0xEE, msg_);
    bytes_ += msg_;
    ++messages_;
    if (!stopped_) post(l, slot);
  }

  Harness& h_;
  ConnPair conn_;
  uint32_t depth_, msg_;
  std::vector<Lane> lanes_;
  uint64_t next_id_ = 0, bytes_ = 0, messages_ = 0, errors_ = 0, verify_failures_ = 0;
  size_t outstanding_ = 0;
  bool stopped_ = false;
};

}  // namespace engine_test
