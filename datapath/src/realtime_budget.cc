#include "metaroce/datapath/realtime_budget.h"

#include <sched.h>

namespace metaroce::datapath {

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

void RealtimeBudget::running_until(Nanos now) {
  if (!enabled_) return;
  used_ns_ += now - last_seen_;
  last_seen_ = now;
  if (now >= window_end_) {
    // A new window. A thread that ran past the end of the last one (it was
    // ordinary then) starts it with its budget whole.
    window_end_ = now + window_ns_;
    used_ns_ = 0;
    if (!realtime_) realtime_ = switch_(true);
  } else if (realtime_ && used_ns_ > budget_ns_) {
    if (switch_(false)) {
      realtime_ = false;
      demotions_++;
    }
  }
}

}  // namespace metaroce::datapath
