// Traffic driver and responder: see traffic.h for the data pattern and the
// semantics. Everything the per-message path touches is sized at creation;
// only the first error of each kind formats a string.
#include "metaroce/daemon/traffic.h"
#include "metaroce/daemon/config.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace metaroce::daemon {

static_assert(std::endian::native == std::endian::little,
              "the pattern's byte order (low byte first) is stored with memcpy");

using transport::Completion;
using transport::PostError;
using transport::TransportKind;
using transport::Verb;
using transport::WcStatus;

namespace {

// Bounds that keep a typo from allocating the machine away: the connections'
// own (transport/connection_params.h), as the engine checks them.
constexpr uint32_t kMaxQueueDepth = transport::kParamQueueDepth.max;
constexpr uint32_t kMaxStreams = transport::kParamStreams.max;
constexpr uint64_t kMaxRegionBytes = uint64_t{1} << 30;  // per buffer
// wr_id = 0 | connection index (15 bits) | stream (8 bits) | message index (40 bits).
// A job holds at most endpoint.max_connections connections (issue 12: 16,000 and more).
constexpr int kConnectionShift = 48;
constexpr uint32_t kMaxConnections = 1u << 15;
static_assert(kMaxConnections >= kMaxConnectionsRange.max, "a job may use every connection the daemon holds");
static_assert(kMaxStreams <= 256, "stream indices take 8 bits of a wr_id");
constexpr uint64_t kStreamMask = 0xFF;
constexpr int kIndexBits = 40;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
// Receive wr_ids carry a tag so that a kRecv with wr_id 0 (WRITE_IMM, which
// consumes no receive) is never mistaken for buffer 0.
constexpr uint64_t kRecvTag = uint64_t{1} << 63;
constexpr uint8_t kPoison = 0xD5;  // scribbled over checked data so stale bytes never pass

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
void store_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

bool fail(std::string* error, std::string msg) {
  if (error) *error = std::move(msg);
  return false;
}

// 8-byte aligned, uninitialised storage (filled by the caller).
std::unique_ptr<uint64_t[]> alloc_words(uint64_t bytes) {
  return std::unique_ptr<uint64_t[]>(new uint64_t[(bytes + 7) / 8]);
}

}  // namespace

// ---------------------------------------------------------------- pattern, layout

uint64_t pattern_word(uint64_t seed, uint64_t slot, uint64_t word) {
  // Distinct odd multipliers spread slot and word over all 64 bits before the
  // mix, so neighbouring slots and words share no structure.
  return splitmix64(seed ^ (slot * 0xD1B54A32D192ED03ull) ^ (word * 0x8CB92BA72F3D8DD7ull));
}

void fill_pattern(uint8_t* p, size_t n, uint64_t seed, uint64_t slot) {
  const size_t words = n / 8;
  for (size_t w = 0; w < words; ++w) store_u64(p + 8 * w, pattern_word(seed, slot, w));
  if (const size_t tail = n % 8) {
    const uint64_t v = pattern_word(seed, slot, words);
    std::memcpy(p + 8 * words, &v, tail);  // the low bytes of the word
  }
}

size_t check_pattern(const uint8_t* p, size_t n, uint64_t seed, uint64_t slot, size_t from_byte) {
  for (size_t w = from_byte / 8; w * 8 < n; ++w) {
    const size_t off = w * 8;
    const size_t len = std::min<size_t>(8, n - off);
    uint64_t got = 0;
    std::memcpy(&got, p + off, len);
    uint64_t want = pattern_word(seed, slot, w);
    if (len < 8) want &= (uint64_t{1} << (8 * len)) - 1;
    if (off < from_byte) {  // first word, partly before from_byte: ignore those bytes
      const uint64_t keep = ~uint64_t{0} << (8 * (from_byte - off));
      got &= keep;
      want &= keep;
    }
    if (got != want) return off + static_cast<size_t>(std::countr_zero(got ^ want) / 8);
  }
  return SIZE_MAX;
}

SlotLayout make_layout(uint32_t streams, uint32_t queue_depth, uint32_t max_message_bytes) {
  SlotLayout l;
  l.streams = streams;
  l.slots_per_stream = 2 * std::max<uint32_t>(queue_depth, 1);
  const uint64_t rounded = (uint64_t{max_message_bytes} + 7) & ~uint64_t{7};
  l.slot_bytes = static_cast<uint32_t>(std::clamp<uint64_t>(rounded, 8, 0xFFFFFFF8u));
  return l;
}


// ---------------------------------------------------------------- driver

struct TrafficDriver::Impl {
  struct Stream {
    uint64_t posted = 0;     // messages posted (the next message index)
    uint64_t completed = 0;  // completions seen, failed ones included
    bool failed = false;     // the engine put the stream in error, or a post failed: no more posts
    bool blocked = false;    // this pump: the engine's queue was full
  };
  struct Conn {
    TransportKind transport = TransportKind::kMetaRoCE;
    std::unique_ptr<uint64_t[]> src, dst, results;  // source ring, READ destination ring, atomic results
    uint32_t src_key = 0, dst_key = 0, results_key = 0;
    uint64_t phase_posted = 0;
    uint8_t* src_bytes() const { return reinterpret_cast<uint8_t*>(src.get()); }
    uint8_t* dst_bytes() const { return reinterpret_cast<uint8_t*>(dst.get()); }
  };

  Verb verb = Verb::kWrite;
  std::vector<Conn> conns;
  std::vector<Stream> streams;    // [conn index * streams + stream]
  std::vector<Nanos> post_time;   // [conn index * streams * slots_per_stream + slot index]
  std::vector<std::pair<uint32_t, uint32_t>> by_id;  // (connection id, index), sorted

  // Phase state (worker thread).
  size_t phase = 0;
  bool phase_open = false, phase_posted_any = false, phase_completed_any = false;
  Nanos phase_deadline = 0;
  uint64_t outstanding = 0;
  PhaseResult current;
  std::vector<std::vector<std::vector<uint64_t>>> stream_end_pool;  // [phase] -> PhaseResult::stream_end

  // Read by fraction_done() from any thread: a sequence lock keeps the phase
  // index and its start time consistent with each other.
  std::atomic<uint32_t> progress_seq{0};
  std::atomic<Nanos> phase_start_ns{0};
  std::atomic<uint64_t> completed_total{0};  // successes and failures

  Stream& stream(size_t ci, uint32_t s) { return streams[ci * conns_streams + s]; }
  size_t conns_streams = 1;
};

TrafficDriver::TrafficDriver(transport::Endpoint& ep, const DriverSpec& spec, std::vector<DriverConnection> conns)
    : impl_(std::make_unique<Impl>()), ep_(ep), spec_(spec), conns_(std::move(conns)) {}

TrafficDriver::~TrafficDriver() { detach(); }

void TrafficDriver::detach() {
  for (Impl::Conn& c : impl_->conns)
    for (uint32_t* key : {&c.src_key, &c.dst_key, &c.results_key})
      if (*key) {
        ep_.deregister_memory(*key);
        *key = 0;
      }
}

std::unique_ptr<TrafficDriver> TrafficDriver::create(transport::Endpoint& ep, const DriverSpec& spec,
                                                     std::vector<DriverConnection> conns, std::string* error) {
  std::unique_ptr<TrafficDriver> d = prepare(ep, spec, std::move(conns), error);
  if (d && !d->attach(error)) d.reset();
  return d;
}

std::unique_ptr<TrafficDriver> TrafficDriver::prepare(transport::Endpoint& ep, const DriverSpec& spec,
                                                      std::vector<DriverConnection> conns, std::string* error) {
  const bool atomic = is_atomic(spec.op);
  const auto invalid = [&](std::string msg) {
    fail(error, std::move(msg));
    return std::unique_ptr<TrafficDriver>();
  };
  if (conns.empty()) return invalid("connections: at least one connection is required");
  if (conns.size() > kMaxConnections)
    return invalid(format("connections: at most %u per job (got %zu)", kMaxConnections, conns.size()));
  if (spec.streams == 0 || spec.streams > kMaxStreams)
    return invalid(format("streams: allowed range [1, %u] (got %u)", kMaxStreams, unsigned{spec.streams}));
  if (spec.queue_depth == 0 || spec.queue_depth > kMaxQueueDepth)
    return invalid(format("queue_depth: allowed range [1, %u] (got %u)", kMaxQueueDepth, spec.queue_depth));
  if (spec.sizes.empty()) return invalid("message_bytes: at least one message size is required");
  const uint32_t largest = *std::max_element(spec.sizes.begin(), spec.sizes.end());
  const uint32_t max_bytes = spec.max_message_bytes ? spec.max_message_bytes : largest;
  for (uint32_t size : spec.sizes) {
    if (size == 0) return invalid("message_bytes: sizes must be >= 1 (got 0)");
    if (atomic && size != 8)
      return invalid(format("message_bytes: %s operates on 8 bytes (got %u)", operation_name(spec.op), size));
    if (size > max_bytes)
      return invalid(format("message_bytes: %u exceeds max_message_bytes %u", size, max_bytes));
  }
  if (spec.iterations == 0 && spec.duration_ns <= 0)
    return invalid("iterations: set iterations or duration_ns (both are 0)");
  if (spec.duration_ns < 0) return invalid(format("duration_ns: must be >= 0 (got %" PRId64 ")", spec.duration_ns));

  const SlotLayout layout = make_layout(spec.streams, spec.queue_depth, max_bytes);
  if (layout.bytes() > kMaxRegionBytes)
    return invalid(format("queue_depth: streams x 2 x queue_depth x slot bytes = %" PRIu64
                          " bytes exceeds the %" PRIu64 "-byte buffer limit",
                          layout.bytes(), kMaxRegionBytes));
  const uint64_t remote_need = atomic ? layout.target_bytes() : layout.bytes();
  for (const DriverConnection& c : conns) {
    if (c.remote_bytes < remote_need)
      return invalid(format("remote region: connection %u offers %" PRIu64 " bytes, the job needs %" PRIu64
                            " (streams %u x 2 x queue_depth %u x slot %u%s)",
                            c.conn, c.remote_bytes, remote_need, unsigned{spec.streams}, spec.queue_depth,
                            layout.slot_bytes, atomic ? " + 8 x streams counters" : ""));
  }

  std::unique_ptr<TrafficDriver> d(new TrafficDriver(ep, spec, std::move(conns)));
  d->spec_.max_message_bytes = max_bytes;
  d->layout_ = layout;
  Impl& im = *d->impl_;
  im.verb = transport::verb_of(spec.op);
  im.conns_streams = spec.streams;
  im.conns.resize(d->conns_.size());
  im.streams.resize(d->conns_.size() * spec.streams);
  im.post_time.assign(d->conns_.size() * spec.streams * layout.slots_per_stream, 0);
  d->stream_messages_.assign(d->conns_.size(), std::vector<uint64_t>(spec.streams, 0));
  d->phases_.reserve(spec.sizes.size());
  im.stream_end_pool.assign(spec.sizes.size(), d->stream_messages_);

  // The buffers, allocated and filled here, off the worker: for a large job
  // this takes milliseconds that the worker would otherwise not spend on
  // frames and timers (measured: 1.4 and 5.9 ms stalls at job start).
  for (Impl::Conn& c : im.conns) {
    if (atomic) {
      c.results = alloc_words(d->result_bytes());
      std::fill_n(c.results.get(), d->result_bytes() / 8, 0);
    } else if (spec.op == Operation::kRead) {
      c.dst = alloc_words(layout.bytes());
      std::memset(c.dst.get(), kPoison, layout.bytes());
    } else {
      // Every slot holds its pattern; only word 0 (the header) changes per message.
      c.src = alloc_words(layout.bytes());
      for (uint32_t s = 0; s < spec.streams; ++s)
        for (uint32_t j = 0; j < layout.slots_per_stream; ++j)
          fill_pattern(c.src_bytes() + layout.offset(s, j), layout.slot_bytes, spec.seed, layout.slot_index(s, j));
    }
  }
  return d;
}

uint64_t TrafficDriver::result_bytes() const { return uint64_t{spec_.streams} * layout_.slots_per_stream * 8; }

bool TrafficDriver::attach(std::string* error) {
  Impl& im = *impl_;
  const auto invalid = [&](std::string msg) {
    detach();
    im.by_id.clear();
    fail(error, std::move(msg));
    return false;
  };
  for (size_t ci = 0; ci < conns_.size(); ++ci) {
    const uint32_t id = conns_[ci].conn;
    Impl::Conn& c = im.conns[ci];
    // The engine has no config accessor; its stats name the transport (control plane, may allocate).
    c.transport = ep_.stats(id).transport;
    if (c.transport == TransportKind::kRoCEv2) {
      if (!transport::runs_on_rocev2(spec_.op))
        return invalid(format("operation: %s is not supported by rocev2 (supported: %s)", operation_name(spec_.op),
                              transport::operation_names(", ", true).c_str()));
      if (spec_.streams != 1)
        return invalid(format("streams: a rocev2 connection has exactly 1 stream (got %u)", unsigned{spec_.streams}));
    }
    im.by_id.emplace_back(id, static_cast<uint32_t>(ci));
    std::optional<uint32_t> key;
    if (c.results) {
      key = ep_.register_memory(c.results.get(), result_bytes(), transport::kAccessLocalWrite);
      c.results_key = key.value_or(0);
    } else if (c.dst) {
      key = ep_.register_memory(c.dst.get(), layout_.bytes(), transport::kAccessLocalWrite);
      c.dst_key = key.value_or(0);
    } else {
      key = ep_.register_memory(c.src.get(), layout_.bytes(), 0);
      c.src_key = key.value_or(0);
    }
    if (!key) return invalid(format("memory: registering the buffers of connection %u failed", id));
    // The engine allocates a stream's request slots and the paths' records at
    // its first post; here, at the job's start, so pump() never allocates. A
    // stream the connection lacks fails at its first post, as without this.
    for (uint16_t s = 0; s < spec_.streams; ++s) ep_.prepare(id, s, transport::ConnectionUse::kRequest);
  }
  std::sort(im.by_id.begin(), im.by_id.end());
  return true;
}

bool TrafficDriver::owns(uint32_t conn) const {
  const auto& v = impl_->by_id;
  auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(conn, uint32_t{0}));
  return it != v.end() && it->first == conn;
}

double TrafficDriver::fraction_done(Nanos now) const {
  if (finished()) return 1.0;
  const double phases = static_cast<double>(spec_.sizes.size());
  if (spec_.iterations > 0) {
    const double total = static_cast<double>(spec_.iterations) * static_cast<double>(conns_.size()) * phases;
    return std::clamp(static_cast<double>(impl_->completed_total.load(std::memory_order_relaxed)) / total, 0.0, 1.0);
  }
  uint32_t seq, phase;
  Nanos start;
  do {
    seq = impl_->progress_seq.load(std::memory_order_acquire);
    phase = phase_.load(std::memory_order_relaxed);
    start = impl_->phase_start_ns.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
  } while ((seq & 1) || seq != impl_->progress_seq.load(std::memory_order_relaxed));
  const double in_phase =
      std::clamp(static_cast<double>(now - start) / static_cast<double>(spec_.duration_ns), 0.0, 1.0);
  return std::clamp((phase + in_phase) / phases, 0.0, 1.0);
}

void TrafficDriver::pump(Nanos now) {
  if (finished_.load(std::memory_order_relaxed)) return;
  Impl& im = *impl_;
  const uint32_t sps = layout_.slots_per_stream;
  while (true) {
    if (!im.phase_open) {
      // Open phase im.phase: publish (index, start) together for fraction_done().
      im.progress_seq.fetch_add(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      phase_.store(static_cast<uint32_t>(im.phase), std::memory_order_relaxed);
      im.phase_start_ns.store(now, std::memory_order_relaxed);
      im.progress_seq.fetch_add(1, std::memory_order_release);
      im.current = PhaseResult{};
      im.current.size = spec_.sizes[im.phase];
      im.phase_deadline = spec_.iterations ? transport::kNever : now + spec_.duration_ns;
      im.phase_posted_any = im.phase_completed_any = false;
      for (Impl::Conn& c : im.conns) c.phase_posted = 0;
      im.phase_open = true;
    }
    const bool stopping = stop_.load(std::memory_order_relaxed);
    const uint32_t size = im.current.size;
    const bool time_left = now < im.phase_deadline;
    bool any_live = false, all_budgets_spent = true;
    for (size_t ci = 0; ci < im.conns.size(); ++ci) {
      Impl::Conn& c = im.conns[ci];
      const DriverConnection& dc = conns_[ci];
      const auto budget_left = [&] { return spec_.iterations ? c.phase_posted < spec_.iterations : time_left; };
      // Round robin over the streams, one message each per round, so an
      // iteration budget is shared evenly.
      for (uint32_t s = 0; s < spec_.streams; ++s) im.stream(ci, s).blocked = false;
      bool posted_one = true;
      while (!stopping && posted_one && budget_left()) {
        posted_one = false;
        for (uint32_t s = 0; s < spec_.streams && budget_left(); ++s) {
          Impl::Stream& st = im.stream(ci, s);
          if (st.failed || st.blocked || st.posted - st.completed >= spec_.queue_depth) continue;
          const uint64_t i = st.posted;
          const uint64_t slot = layout_.slot_index(s, i);
          transport::WorkRequest wr;
          wr.wr_id = (uint64_t{static_cast<uint32_t>(ci)} << kConnectionShift) | (uint64_t{s} << kIndexBits) |
                     (i & kIndexMask);
          wr.verb = im.verb;
          wr.length = size;
          if (is_atomic(spec_.op)) {
            wr.local_addr = reinterpret_cast<uint64_t>(c.results.get() + slot);
            wr.lkey = c.results_key;
            wr.length = 8;
            wr.remote_addr = dc.remote_addr + layout_.counter_offset(s);
            wr.rkey = dc.rkey;
            wr.compare_add = spec_.op == Operation::kFetchAdd ? 1 : i;
            wr.swap = i + 1;
            c.results[slot] = ~i;  // never the expected value: a result that is not written fails the check
          } else if (spec_.op == Operation::kRead) {
            wr.local_addr = reinterpret_cast<uint64_t>(c.dst_bytes() + layout_.offset(s, i));
            wr.lkey = c.dst_key;
            wr.remote_addr = dc.remote_addr + layout_.offset(s, i);
            wr.rkey = dc.rkey;
          } else {
            uint8_t* src = c.src_bytes() + layout_.offset(s, i);
            // Short messages carry pattern bytes only (see traffic.h).
            store_u64(src, size >= 8 ? message_header(s, i) : pattern_word(spec_.seed, slot, 0));
            wr.local_addr = reinterpret_cast<uint64_t>(src);
            wr.lkey = c.src_key;
            if (spec_.op != Operation::kSend) {
              wr.remote_addr = dc.remote_addr + layout_.offset(s, i);
              wr.rkey = dc.rkey;
            }
            wr.imm = static_cast<uint32_t>(i);
          }
          const PostError e = ep_.post(dc.conn, static_cast<uint16_t>(s), wr);
          if (e == PostError::kQueueFull) {  // the engine's own limit: retry on a later pump
            st.blocked = true;
            continue;
          }
          if (e != PostError::kOk) {
            st.failed = true;
            errors_.fetch_add(1, std::memory_order_relaxed);
            if (first_error_.empty()) {
              if (e == PostError::kUnsupported)
                first_error_ = format("operation: %s is not supported by %s on connection %u", operation_name(spec_.op),
                                      transport::transport_name(c.transport), dc.conn);
              else if (e == PostError::kBadStream)
                first_error_ = format("streams: connection %u has no stream %u", dc.conn, s);
              else if (e == PostError::kBadLength)
                first_error_ = format("message_bytes: connection %u refused %u bytes (bad_length)", dc.conn, size);
              else
                first_error_ = format("connection %u stream %u message %" PRIu64 ": post failed: %s", dc.conn, s, i,
                                      transport::post_error_name(e));
            }
            continue;
          }
          im.post_time[ci * spec_.streams * sps + slot] = now;
          if (!im.phase_posted_any) {
            im.phase_posted_any = true;
            im.current.start_ns = now;
          }
          ++st.posted;
          ++c.phase_posted;
          ++im.outstanding;
          posted_one = true;
        }
      }
      bool live = false;
      for (uint32_t s = 0; s < spec_.streams; ++s) live |= !im.stream(ci, s).failed;
      any_live |= live;
      if (live && budget_left()) all_budgets_spent = false;
    }
    const bool exhausted = stopping || !any_live || all_budgets_spent;
    if (im.outstanding != 0 || !exhausted) return;

    // Close the phase: nothing is in flight, so every completion so far belongs to it.
    if (!im.phase_posted_any) im.current.start_ns = now;
    if (!im.phase_completed_any) im.current.end_ns = im.current.start_ns;
    // Reserved and pre-sized at creation: closing a phase allocates nothing either.
    std::vector<std::vector<uint64_t>>& end = im.stream_end_pool[im.phase];
    for (size_t ci = 0; ci < end.size(); ++ci)
      std::copy(stream_messages_[ci].begin(), stream_messages_[ci].end(), end[ci].begin());
    im.current.stream_end = std::move(end);
    phases_.push_back(std::move(im.current));
    im.phase_open = false;
    if (stopping || im.phase + 1 >= spec_.sizes.size()) {
      finished_.store(true, std::memory_order_release);
      return;
    }
    ++im.phase;
  }
}

void TrafficDriver::on_completion(const Completion& c, Nanos now) {
  if (c.verb == Verb::kRecv) return;  // receive side of a connection used both ways: not ours
  Impl& im = *impl_;
  const size_t ci = static_cast<size_t>(c.wr_id >> kConnectionShift);
  const uint32_t s = c.stream;
  if (ci >= conns_.size() || conns_[ci].conn != c.conn || s >= spec_.streams ||
      ((c.wr_id >> kIndexBits) & kStreamMask) != s) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    if (first_error_.empty())
      first_error_ = format("connection %u stream %u: completion with a foreign wr_id 0x%" PRIx64, c.conn, s, c.wr_id);
    return;
  }
  Impl::Stream& st = im.stream(ci, s);
  const uint64_t i = st.completed;  // completions arrive in post order per stream
  if (st.completed == st.posted || (c.wr_id & kIndexMask) != (i & kIndexMask)) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    if (first_error_.empty())
      first_error_ = format("connection %u stream %u message %" PRIu64 ": completion out of post order (wr_id 0x%" PRIx64
                            ")",
                            c.conn, s, i, c.wr_id);
    return;
  }
  ++st.completed;
  --im.outstanding;
  im.completed_total.fetch_add(1, std::memory_order_relaxed);
  im.phase_completed_any = true;
  im.current.end_ns = now;
  if (c.status != WcStatus::kSuccess) {
    // The engine stops the stream at the first failure and flushes the rest:
    // keep draining, post nothing more on it.
    st.failed = true;
    ++completion_errors_;
    errors_.fetch_add(1, std::memory_order_relaxed);
    if (first_error_.empty())
      first_error_ = format("connection %u stream %u message %" PRIu64 ": %s", c.conn, s, i,
                            transport::wc_status_name(c.status));
    return;
  }
  const uint64_t slot = layout_.slot_index(s, i);
  const uint32_t size = im.current.size;
  im.current.latency.record(now - im.post_time[ci * spec_.streams * layout_.slots_per_stream + slot]);
  im.current.messages++;
  im.current.bytes += size;
  stream_messages_[ci][s]++;
  messages_done_.fetch_add(1, std::memory_order_relaxed);
  bytes_done_.fetch_add(size, std::memory_order_relaxed);
  if (!spec_.verify) return;

  Impl::Conn& conn = im.conns[ci];
  if (spec_.op == Operation::kRead) {
    uint8_t* dst = conn.dst_bytes() + layout_.offset(s, i);
    const size_t bad = check_pattern(dst, size, spec_.seed, slot);
    if (bad != SIZE_MAX) {
      ++verify_failures_;
      errors_.fetch_add(1, std::memory_order_relaxed);
      if (first_error_.empty())
        first_error_ = format("connection %u stream %u message %" PRIu64
                              ": read data differs from the pattern of slot %" PRIu64 " at byte %zu",
                              c.conn, s, i, slot, bad);
    }
    std::memset(dst, kPoison, size);  // the next READ into this slot must bring its own bytes
  } else if (is_atomic(spec_.op)) {
    const uint64_t got = conn.results[slot];
    if (got != i) {
      ++verify_failures_;
      errors_.fetch_add(1, std::memory_order_relaxed);
      if (first_error_.empty())
        first_error_ = format("connection %u stream %u message %" PRIu64 ": %s returned %" PRIu64 ", want %" PRIu64,
                              c.conn, s, i, operation_name(spec_.op), got, i);
    }
  }
}

// ---------------------------------------------------------------- responder

Responder::Responder(transport::Endpoint& ep, const Spec& spec) : ep_(ep), spec_(spec) {}

Responder::~Responder() { detach(); }

void Responder::detach() {
  for (uint32_t* key : {&target_key_, &recv_key_})
    if (*key) {
      ep_.deregister_memory(*key);
      *key = 0;
    }
}

uint64_t Responder::target_addr() const { return reinterpret_cast<uint64_t>(target_.data()); }

namespace {
uint64_t responder_recv_bytes(const Responder::Spec& spec) {
  return uint64_t{spec.streams} * 2 * spec.queue_depth * spec.recv_message_bytes;
}
}  // namespace

uint64_t Responder::memory_bytes(const Spec& spec) {
  return make_layout(spec.streams, spec.queue_depth, spec.max_message_bytes).target_bytes() +
         responder_recv_bytes(spec);
}

std::unique_ptr<Responder> Responder::create(transport::Endpoint& ep, const Spec& spec, std::string* error) {
  std::unique_ptr<Responder> r = prepare(ep, spec, error);
  if (r && !r->attach(error)) r.reset();
  return r;
}

std::unique_ptr<Responder> Responder::prepare(transport::Endpoint& ep, const Spec& spec, std::string* error) {
  const auto invalid = [&](std::string msg) {
    fail(error, std::move(msg));
    return std::unique_ptr<Responder>();
  };
  if (spec.streams == 0 || spec.streams > kMaxStreams)
    return invalid(format("streams: allowed range [1, %u] (got %u)", kMaxStreams, unsigned{spec.streams}));
  if (spec.queue_depth == 0 || spec.queue_depth > kMaxQueueDepth)
    return invalid(format("queue_depth: allowed range [1, %u] (got %u)", kMaxQueueDepth, spec.queue_depth));
  if (spec.max_message_bytes == 0) return invalid("max_message_bytes: must be >= 1 (got 0)");
  const SlotLayout layout = make_layout(spec.streams, spec.queue_depth, spec.max_message_bytes);
  if (layout.target_bytes() > kMaxRegionBytes)
    return invalid(format("max_message_bytes: the target region (streams x 2 x queue_depth x slot bytes) would be "
                          "%" PRIu64 " bytes, above the %" PRIu64 "-byte limit",
                          layout.target_bytes(), kMaxRegionBytes));
  const uint32_t recvs_per_stream = 2 * spec.queue_depth;
  const uint64_t recv_bytes = responder_recv_bytes(spec);
  if (recv_bytes > kMaxRegionBytes)
    return invalid(format("recv_message_bytes: streams x 2 x queue_depth receives of %u bytes exceed the %" PRIu64
                          "-byte limit",
                          spec.recv_message_bytes, kMaxRegionBytes));

  std::unique_ptr<Responder> r(new Responder(ep, spec));
  r->layout_ = layout;
  // Allocated and filled here, off the worker (see TrafficDriver::prepare).
  // operator new aligns to at least 16 bytes, so the counters (at a multiple
  // of 8) are aligned for atomics.
  r->target_.assign(layout.target_bytes(), 0);  // counters start at 0
  for (uint32_t s = 0; s < spec.streams; ++s)
    for (uint32_t j = 0; j < layout.slots_per_stream; ++j)
      fill_pattern(r->target_.data() + layout.offset(s, j), layout.slot_bytes, spec.seed, layout.slot_index(s, j));
  r->next_recv_.assign(spec.streams, 0);
  if (spec.recv_message_bytes > 0) {
    r->recvs_per_stream_ = recvs_per_stream;
    r->recv_.assign(recv_bytes, kPoison);
  }
  return r;
}

bool Responder::attach(std::string* error) {
  const auto invalid = [&](std::string msg) {
    detach();
    fail(error, std::move(msg));
    return false;
  };
  auto key = ep_.register_memory(target_.data(), target_.size(),
                                 transport::kAccessRemoteWrite | transport::kAccessRemoteRead |
                                     transport::kAccessRemoteAtomic);
  if (!key) return invalid("memory: registering the target region failed");
  target_key_ = *key;
  // Every operation's requests land in the stream's receive window, which the
  // engine would otherwise allocate at the first one, inside the worker's
  // receive path. (Response slots, for READs and atomics only, still come with
  // the first of those: the responder is not told the operation.)
  for (uint16_t s = 0; s < spec_.streams; ++s) ep_.prepare(spec_.conn, s, transport::ConnectionUse::kReceive);
  if (spec_.recv_message_bytes == 0) return true;
  key = ep_.register_memory(recv_.data(), recv_.size(), transport::kAccessLocalWrite);
  if (!key) return invalid("memory: registering the receive buffers failed");
  recv_key_ = *key;
  // A failure here leaves receives posted into recv_: the caller destroys the
  // connection (which drops them) before the memory goes.
  for (uint32_t s = 0; s < spec_.streams; ++s)
    for (uint32_t b = 0; b < recvs_per_stream_; ++b) {
      transport::RecvRequest rr;
      rr.wr_id = kRecvTag | (uint64_t{s} << 32) | b;
      rr.addr = reinterpret_cast<uint64_t>(recv_.data()) + (uint64_t{s} * recvs_per_stream_ + b) * spec_.recv_message_bytes;
      rr.lkey = recv_key_;
      rr.length = spec_.recv_message_bytes;
      const PostError e = ep_.post_recv(spec_.conn, static_cast<uint16_t>(s), rr);
      if (e == PostError::kQueueFull)
        return invalid(format("queue_depth: %u receives per stream (2 x queue_depth) exceed connection %u's "
                              "receive window (recv_window_messages)",
                              recvs_per_stream_, spec_.conn));
      if (e == PostError::kBadStream) return invalid(format("streams: connection %u has no stream %u", spec_.conn, s));
      if (e != PostError::kOk)
        return invalid(format("connection %u stream %u: post_recv failed: %s", spec_.conn, s,
                              transport::post_error_name(e)));
    }
  return true;
}

void Responder::on_completion(const Completion& c, Nanos) {
  if (c.verb != Verb::kRecv || c.conn != spec_.conn) return;
  const auto mismatch = [&](std::string detail) {
    ++recv_mismatches_;
    if (recv_detail_.empty()) recv_detail_ = std::move(detail);
  };
  const uint32_t s = c.stream;
  if (s >= spec_.streams) return mismatch(format("receive on stream %u, the job has %u", s, unsigned{spec_.streams}));
  if (c.status != WcStatus::kSuccess)  // the stream is in error now: its receive is not re-posted
    return mismatch(format("stream %u message %" PRIu64 ": receive failed: %s", s, next_recv_[s],
                           transport::wc_status_name(c.status)));
  const uint64_t i = next_recv_[s]++;
  ++received_;
  const uint64_t slot = layout_.slot_index(s, i);
  const auto check_message = [&](const uint8_t* p, uint32_t len, const char* what) {
    if (len >= 8 && load_u64(p) != message_header(s, i))
      return mismatch(format("stream %u message %" PRIu64 ": %s header is 0x%" PRIx64 ", want 0x%" PRIx64, s, i, what,
                             load_u64(p), message_header(s, i)));
    const size_t bad = check_pattern(p, len, spec_.seed, slot, len >= 8 ? 8 : 0);
    if (bad != SIZE_MAX)
      mismatch(format("stream %u message %" PRIu64 ": %s byte %zu differs from the pattern of slot %" PRIu64, s, i,
                      what, bad, slot));
  };
  if (c.remote_verb == Verb::kWriteImm) {
    // No receive consumed; the data is in the target slot. The slot is not
    // rewritten before the requester sees queue_depth more completions, so it
    // still holds this message when its completion is polled promptly.
    if (!c.has_imm || c.imm != static_cast<uint32_t>(i))
      return mismatch(format("stream %u message %" PRIu64 ": immediate is %u, want %u", s, i, c.imm,
                             static_cast<uint32_t>(i)));
    if (c.byte_len > layout_.slot_bytes)
      return mismatch(format("stream %u message %" PRIu64 ": %u bytes exceed the slot", s, i, c.byte_len));
    return check_message(target_.data() + layout_.offset(s, i), c.byte_len, "target");
  }
  // SEND: the buffer named by the wr_id; re-posted once checked.
  if (!(c.wr_id & kRecvTag) || ((c.wr_id >> 32) & 0x7FFFFFFF) != s ||
      static_cast<uint32_t>(c.wr_id) >= recvs_per_stream_ || c.byte_len > spec_.recv_message_bytes)
    return mismatch(format("stream %u message %" PRIu64 ": receive completion with a foreign wr_id 0x%" PRIx64, s, i,
                           c.wr_id));
  const uint32_t b = static_cast<uint32_t>(c.wr_id);
  uint8_t* buf = recv_.data() + (uint64_t{s} * recvs_per_stream_ + b) * spec_.recv_message_bytes;
  check_message(buf, c.byte_len, "received");
  std::memset(buf, kPoison, c.byte_len);  // a later message into this buffer must bring its own bytes
  transport::RecvRequest rr;
  rr.wr_id = c.wr_id;
  rr.addr = reinterpret_cast<uint64_t>(buf);
  rr.lkey = recv_key_;
  rr.length = spec_.recv_message_bytes;
  const PostError e = ep_.post_recv(spec_.conn, static_cast<uint16_t>(s), rr);
  if (e != PostError::kOk)
    mismatch(format("stream %u: re-posting receive %u failed: %s", s, b, transport::post_error_name(e)));
}

VerifyResult Responder::verify(Operation op, const std::vector<uint64_t>& stream_messages,
                               uint32_t message_bytes) const {
  return verify(op, std::vector<VerifyPhase>{VerifyPhase{message_bytes, stream_messages}});
}

VerifyResult Responder::verify(Operation op, const std::vector<VerifyPhase>& phases) const {
  VerifyResult r;
  r.received_messages = received_;
  const auto mismatch = [&](std::string detail) {
    ++r.mismatches;
    if (r.detail.empty()) r.detail = std::move(detail);
  };
  if (phases.empty()) mismatch("phases: at least one phase is required");
  for (size_t p = 0; p < phases.size(); ++p)
    if (phases[p].stream_end.size() != spec_.streams)
      mismatch(format("phases[%zu]: %zu streams given, the responder has %u", p, phases[p].stream_end.size(),
                      unsigned{spec_.streams}));
  if (r.mismatches) {
    r.ok = false;
    return r;
  }
  const std::vector<uint64_t>& totals = phases.back().stream_end;
  const uint32_t sps = layout_.slots_per_stream;
  const bool writes = op == Operation::kWrite || op == Operation::kWriteImm;
  for (uint32_t s = 0; s < spec_.streams; ++s) {
    const uint64_t n = totals[s];
    for (uint32_t j = 0; j < sps; ++j) {
      const uint64_t slot = layout_.slot_index(s, j);
      const uint8_t* p = target_.data() + layout_.offset(s, j);
      r.checked_bytes += layout_.slot_bytes;
      // A request posted but never completed (in flight when its stream
      // failed) may still have landed: at most queue_depth of them, each a
      // whole, correct message. Such a slot holds that later message instead.
      const uint64_t in_flight_limit = n + spec_.queue_depth;
      uint64_t msg = UINT64_MAX;
      if (writes && j < n) msg = j + (n - 1 - j) / sps * sps;  // the last completed message of this slot
      if (writes && layout_.slot_bytes >= 8) {
        const uint64_t later = msg == UINT64_MAX ? j : msg + sps;
        if (later < in_flight_limit && load_u64(p) == message_header(s, later)) msg = later;
      }
      if (msg == UINT64_MAX) {  // never a WRITE target: the whole slot still holds the pattern
        if (const size_t bad = check_pattern(p, layout_.slot_bytes, spec_.seed, slot); bad != SIZE_MAX)
          mismatch(format("stream %u slot %" PRIu64 " (no message): byte %zu differs from the pattern", s, slot, bad));
        continue;
      }
      const uint64_t last = msg;
      size_t ph = 0;
      while (ph + 1 < phases.size() && phases[ph].stream_end[s] <= last) ++ph;
      const uint32_t size = phases[ph].message_bytes;
      size_t bad = SIZE_MAX;
      if (size >= 8) {
        if (load_u64(p) != message_header(s, last)) {
          mismatch(format("stream %u slot %" PRIu64 " message %" PRIu64 ": header is 0x%" PRIx64 ", want 0x%" PRIx64, s,
                          slot, last, load_u64(p), message_header(s, last)));
          continue;
        }
      } else {
        // A short message wrote pattern bytes [0, size); the rest of word 0
        // holds whatever an earlier message or the initial fill left there.
        bad = check_pattern(p, std::min<uint32_t>(size, layout_.slot_bytes), spec_.seed, slot);
      }
      if (bad == SIZE_MAX) bad = check_pattern(p, layout_.slot_bytes, spec_.seed, slot, 8);
      if (bad != SIZE_MAX)
        mismatch(format("stream %u slot %" PRIu64 " message %" PRIu64 ": byte %zu differs from the pattern", s, slot,
                        last, bad));
    }
    if (is_atomic(op)) {
      const uint64_t counter = load_u64(target_.data() + layout_.counter_offset(s));
      r.checked_bytes += 8;
      // Atomics in flight when a stream failed may have executed: up to queue_depth more.
      if (counter < n || counter > n + spec_.queue_depth)
        mismatch(format("stream %u: counter is %" PRIu64 ", want %" PRIu64 " (one per completed %s, plus at most %u "
                        "in flight)", s, counter, n, operation_name(op), spec_.queue_depth));
    }
  }
  if (op == Operation::kSend || op == Operation::kWriteImm) {
    uint64_t total = 0;
    for (uint64_t n : totals) total += n;
    if (received_ != total)
      mismatch(format("received %" PRIu64 " messages, the requester completed %" PRIu64, received_, total));
    if (recv_mismatches_) {
      r.mismatches += recv_mismatches_;
      if (r.detail.empty()) r.detail = recv_detail_;
    }
  }
  r.ok = r.mismatches == 0;
  return r;
}

}  // namespace metaroce::daemon
