// Process-wide DPDK EAL set-up and tear-down (see eal.h). Control plane only.
#include "dpdk/eal.h"

#include <pthread.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>

namespace metaroce::datapath::dpdk {
namespace {

enum class State {
  kNone,      // never tried
  kOurs,      // we initialised it from `args`
  kExternal,  // the application initialised it before our first call
  kFailed,    // our last attempt failed (`failure` says why)
  kCleaned,   // rte_eal_cleanup ran at exit
};

struct Eal {
  std::mutex mu;
  State state = State::kNone;
  std::vector<std::string> args;
  std::string failure;
  std::map<uint16_t, std::string> claims;  // ethdev port id -> metaroce port name
  std::deque<std::string> arg_text;        // argv given to rte_eal_init (stable addresses)
  std::deque<std::vector<char*>> argvs;
  bool atexit_registered = false;
  uint32_t next_id = 0;
};

// Never destroyed: the exit-time handler below must still find it after
// static destructors have started to run.
Eal& eal() {
  static Eal* const e = new Eal;
  return *e;
}

std::string join(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s.empty() ? "(none)" : s;
}

void cleanup_at_exit() {
  Eal& e = eal();
  // exit() may be called while another thread is opening a port: never block here.
  std::unique_lock lock(e.mu, std::try_to_lock);
  if (!lock.owns_lock() || e.state != State::kOurs || !e.claims.empty()) return;
  const char* dir = rte_eal_get_runtime_dir();
  const std::string runtime_dir = dir ? dir : "";
  rte_eal_cleanup();
  e.state = State::kCleaned;
  // With --no-shconf the directory stays empty; rmdir refuses anything else.
  if (!runtime_dir.empty()) rmdir(runtime_dir.c_str());
}

}  // namespace

bool ensure_eal(const std::vector<std::string>& eal_args, std::string* error) {
  Eal& e = eal();
  std::lock_guard lock(e.mu);
  switch (e.state) {
    case State::kOurs:
      if (eal_args.empty() || eal_args == e.args) return true;
      *error = "eal_args: the DPDK EAL of this process was already initialised by an earlier port with '" +
               join(e.args) + "'; every DPDK port must pass the same eal_args or none (got '" + join(eal_args) + "')";
      return false;
    case State::kExternal:
      return true;  // the application owns the EAL; its arguments are not ours to check
    case State::kCleaned:
      *error = "eal_args: the DPDK EAL of this process has already been cleaned up (process exiting)";
      return false;
    case State::kNone:
    case State::kFailed:
      break;
  }

  // rte_eal_init may permute argv and keep pointers into it: give it a copy
  // that lives (reachably, in `e`) for the rest of the process.
  e.arg_text.emplace_back("metaroce");
  auto& argv = e.argvs.emplace_back();
  argv.push_back(e.arg_text.back().data());
  for (const auto& a : eal_args) {
    e.arg_text.push_back(a);
    argv.push_back(e.arg_text.back().data());
  }
  argv.push_back(nullptr);

  cpu_set_t affinity;
  const bool have_affinity = pthread_getaffinity_np(pthread_self(), sizeof(affinity), &affinity) == 0;
  const int rc = rte_eal_init(static_cast<int>(argv.size() - 1), argv.data());
  const int err = rte_errno;
  if (have_affinity) pthread_setaffinity_np(pthread_self(), sizeof(affinity), &affinity);

  if (rc < 0) {
    if (err == EALREADY && e.state == State::kNone) {
      e.state = State::kExternal;
      return true;
    }
    if (err == EALREADY) {
      *error = "eal_args: rte_eal_init failed earlier in this process (" + e.failure +
               ") and DPDK cannot be initialised a second time";
      return false;
    }
    e.state = State::kFailed;
    e.failure = "eal_args: rte_eal_init failed: " + std::string(rte_strerror(err)) + " (with '" + join(eal_args) +
                "'; the EAL's own messages above say which option)";
    *error = e.failure;
    return false;
  }
  e.state = State::kOurs;
  e.args = eal_args;
  if (!e.atexit_registered) {
    std::atexit(cleanup_at_exit);
    e.atexit_registered = true;
  }
  return true;
}

bool claim_ethdev(uint16_t port_id, const std::string& port_name, std::string* owner) {
  Eal& e = eal();
  std::lock_guard lock(e.mu);
  const auto [it, inserted] = e.claims.emplace(port_id, port_name);
  if (!inserted) *owner = it->second;
  return inserted;
}

void release_ethdev(uint16_t port_id) {
  Eal& e = eal();
  std::lock_guard lock(e.mu);
  e.claims.erase(port_id);
}

uint32_t next_object_id() {
  Eal& e = eal();
  std::lock_guard lock(e.mu);
  return e.next_id++;
}

}  // namespace metaroce::datapath::dpdk
