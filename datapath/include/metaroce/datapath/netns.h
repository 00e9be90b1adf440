// Runs the calling thread inside a named network namespace (/run/netns/NAME,
// as `ip netns` makes them) for the object's lifetime, then moves it back.
// Ports bind to interfaces of the namespace they are opened in.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace metaroce::datapath {

class ScopedNetns {
 public:
  explicit ScopedNetns(const std::string& ns) {
    self_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    const int fd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (self_ < 0 || fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      if (fd >= 0) close(fd);
      if (self_ >= 0) close(self_);
      self_ = -1;
      throw std::runtime_error("cannot enter network namespace " + ns);
    }
    close(fd);
  }
  ~ScopedNetns() {
    if (self_ >= 0) {
      setns(self_, CLONE_NEWNET);
      close(self_);
    }
  }
  ScopedNetns(const ScopedNetns&) = delete;
  ScopedNetns& operator=(const ScopedNetns&) = delete;

 private:
  int self_ = -1;
};

}  // namespace metaroce::datapath
