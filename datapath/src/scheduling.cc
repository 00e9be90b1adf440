#include "metaroce/datapath/scheduling.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>

namespace metaroce::datapath {

std::string check_cpu_available(int cpu) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return std::string("sched_getaffinity: ") + std::strerror(errno);
  if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed)) return "";
  std::string list;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) list += (list.empty() ? "" : ",") + std::to_string(c);
  return "CPU " + std::to_string(cpu) + " is not one this process may use (" + list + ")";
}

std::string pin_thread(pthread_t thread, int cpu) {
  if (std::string e = check_cpu_available(cpu); !e.empty()) return e;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  const int rc = pthread_setaffinity_np(thread, sizeof one, &one);
  return rc == 0 ? "" : std::string("pthread_setaffinity_np: ") + std::strerror(rc);
}

bool RealtimeBudget::switch_calling_thread(bool realtime) {
  sched_param p{};
  p.sched_priority = realtime ? kRealtimePriority : 0;
  return sched_setscheduler(0, realtime ? SCHED_FIFO : SCHED_OTHER, &p) == 0;
}

RealtimeBudget::RealtimeBudget(double share, Nanos now, Switch sw, Nanos window_ns)
    : share_(share),
      budget_ns_(static_cast<Nanos>(share * static_cast<double>(window_ns))),
      window_ns_(window_ns),
      switch_(sw),
      window_end_(now + window_ns),
      last_seen_(now) {
  if (share > 0) enabled_ = realtime_ = switch_(true);
}

RealtimeBudget::~RealtimeBudget() {
  if (realtime_) switch_(false);
}

bool RealtimeBudget::running_until(Nanos now) {
  if (!enabled_) return false;
  used_ns_ += now - last_seen_;
  last_seen_ = now;
  if (now >= window_end_) {
    // A new window. A thread that ran past the end of the last one (it was
    // ordinary then) starts it with its budget whole.
    window_end_ = now + window_ns_;
    used_ns_ = 0;
    if (!realtime_) realtime_ = switch_(true);
  } else if (realtime_ && used_ns_ > budget_ns_ && switch_(false)) {
    realtime_ = false;
    demotions_++;
    return true;
  }
  return false;
}

}  // namespace metaroce::datapath
