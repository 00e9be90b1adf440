// Case selection by glob and the runner: each case in its own context (its
// own connections, closed afterwards), every failure caught and kept with the
// case's transcript.
#include <chrono>
#include <exception>

#include "case_context.h"
#include "metaroce/conformance/suite.h"

namespace metaroce::conformance {

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative matcher with one backtrack point for the last '*'.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<const CaseInfo*> select_cases(std::string_view patterns, std::string_view flag, std::string* error) {
  std::vector<const CaseInfo*> out;
  const auto& all = catalogue();
  if (patterns.empty()) {
    for (const auto& c : all) out.push_back(&c);
    return out;
  }
  std::string known;
  for (const auto& c : all) known += (known.empty() ? "" : ", ") + c.id;
  std::vector<std::string_view> globs;
  for (size_t start = 0;;) {
    const size_t comma = patterns.find(',', start);
    globs.push_back(patterns.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  for (std::string_view g : globs) {
    const bool chars_ok = !g.empty() && g.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-*?") == std::string_view::npos;
    if (!chars_ok) {
      *error = std::string(flag) + ": each comma-separated pattern is a case id or a glob of lower-case letters, digits, "
               "'.', '-', '*' and '?' (got '" + std::string(g.substr(0, 64)) + "')";
      return {};
    }
    bool any = false;
    for (const auto& c : all) any = any || glob_match(g, c.id);
    if (!any) {
      *error = std::string(flag) + ": pattern '" + std::string(g) + "' matches no case; the cases are: " + known;
      return {};
    }
  }
  for (const auto& c : all)
    for (std::string_view g : globs)
      if (glob_match(g, c.id)) {
        out.push_back(&c);
        break;
      }
  return out;
}

std::vector<CaseResult> run_cases(Dut& dut, const std::vector<const CaseInfo*>& cases, const RunOptions& options) {
  std::vector<CaseResult> results;
  uint64_t case_seed = options.seed;
  for (const CaseInfo* info : cases) {
    CaseResult r;
    r.info = info;
    case_seed = case_seed * 6364136223846793005ull + 1442695040888963407ull;
    const auto start = std::chrono::steady_clock::now();
    try {
      CaseContext ctx(dut, options, case_seed, r);
      info->run(ctx);
      r.passed = true;
    } catch (const CaseFailure& e) {
      r.failure = e.what();
    } catch (const DutError& e) {
      r.failure = std::string("control call failed: ") + e.what();
    } catch (const std::exception& e) {
      r.failure = std::string("internal error: ") + e.what();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace metaroce::conformance
