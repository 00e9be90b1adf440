// Helpers shared by the metarocectl command files (declared in commands.h):
// printing to stdout, JSON output of protobuf messages, joining lists, and
// the example/global-flags footer of every subcommand's help.
#include "commands.h"

#include <fmt/format.h>

#include <cstdio>

namespace metarocectl {

void print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
  std::fflush(stdout);
}

void print_json(const google::protobuf::Message& message) { print(to_json(message, true)); }

std::string join(const google::protobuf::RepeatedPtrField<std::string>& items, std::string_view sep) {
  return fmt::format("{}", fmt::join(items.begin(), items.end(), sep));
}

std::string example(std::string_view text) {
  return fmt::format("Example:\n  {}\n\nGlobal flags (--server, --token, --tls..., -o json, --timeout) and exit "
                     "codes: metarocectl --help",
                     text);
}

}  // namespace metarocectl
