#include "metaroce/transport/operations.h"

namespace metaroce::transport {

// The names of the verbs, and so of the operations (one table of names: flags,
// scenario files, the API's Verify request, logs and completions all show these).
const char* verb_name(Verb v) {
  switch (v) {
    case Verb::kWrite: return "write";
    case Verb::kWriteImm: return "write_imm";
    case Verb::kSend: return "send";
    case Verb::kSendImm: return "send_imm";
    case Verb::kRead: return "read";
    case Verb::kFetchAdd: return "fetch_add";
    case Verb::kCmpSwap: return "cmp_swap";
    case Verb::kRecv: return "recv";
  }
  return "unknown";
}

// kOperations is indexed by Operation: the table lists them in enum order.
static_assert([] {
  for (size_t i = 0; i < kOperations.size(); ++i)
    if (static_cast<size_t>(kOperations[i].op) != i) return false;
  return true;
}());

const OperationInfo& operation_info(Operation op) { return kOperations.at(static_cast<size_t>(op)); }

const char* operation_name(Operation op) { return verb_name(operation_info(op).verb); }

std::optional<Operation> parse_operation(std::string_view name) {
  for (const OperationInfo& o : kOperations)
    if (name == verb_name(o.verb)) return o.op;
  return std::nullopt;
}

std::vector<std::string> operation_name_list() {
  std::vector<std::string> out;
  for (const OperationInfo& o : kOperations) out.emplace_back(verb_name(o.verb));
  return out;
}

std::string operation_names(std::string_view separator, bool rocev2_only) {
  std::string out;
  for (const OperationInfo& o : kOperations) {
    if (rocev2_only && !rocev2_supports(o.verb)) continue;
    if (!out.empty()) out += separator;
    out += verb_name(o.verb);
  }
  return out;
}

}  // namespace metaroce::transport
