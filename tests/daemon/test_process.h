// Child processes for the daemon tests: start one with its output in a log
// file, wait (bounded) for it to exit, read its log.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace daemon_test {

// A loopback address of this test process's own for its host h (0, 1, 2;
// every 127/8 address is on lo): 127.<pid / 256 % 256>.<pid % 256>.<h + 1>.
// An endpoint on the UDP datapath listens on its address's UDP 4791 for
// RoCEv2 besides its own port, so daemons of tests that run at once need
// addresses of their own, not only ports. Hosts 0 and 1 are each other's
// partner address (xor 3) as the conformance suite chooses it on loopback.
inline std::string loopback_ip(int h) {
  const unsigned pid = static_cast<unsigned>(getpid());
  return "127." + std::to_string((pid >> 8) & 0xFF) + "." + std::to_string(pid & 0xFF) + "." + std::to_string(h + 1);
}

inline pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::fopen(log.c_str(), "w");
    if (f) {
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
    }
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    _exit(127);
  }
  return pid;
}

// Waits (bounded) for a process to exit; its exit status or -1 on timeout/signal.
inline int wait_exit(pid_t pid, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int st = 0;
    const pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (r < 0 || std::chrono::steady_clock::now() > until) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace daemon_test
