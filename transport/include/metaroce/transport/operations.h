// The operations a traffic job runs, declared once: metaroced's traffic driver
// and its Verify request, scenario files (jobs[].op), `metarocectl traffic
// --op` and its help all read this table. An operation is the verb the
// requester posts and is named by that verb (verb_name: "write_imm"); the
// RoCEv2 baseline runs those whose verb it supports. The API's enum
// (metaroce.v1.Operation) is mapped in one place too: proto/codec
// (metaroce/api/operation_codec.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metaroce/transport/types.h"

namespace metaroce::transport {

enum class Operation : uint8_t { kWrite, kWriteImm, kRead, kSend, kFetchAdd, kCmpSwap };

struct OperationInfo {
  Operation op;
  Verb verb;  // what the requester posts
};

// Every operation, in the order users are shown them.
inline constexpr std::array<OperationInfo, 6> kOperations = {{
    {Operation::kWrite, Verb::kWrite},
    {Operation::kWriteImm, Verb::kWriteImm},
    {Operation::kRead, Verb::kRead},
    {Operation::kSend, Verb::kSend},
    {Operation::kFetchAdd, Verb::kFetchAdd},
    {Operation::kCmpSwap, Verb::kCmpSwap},
}};

// The verbs an RoCEv2 RC QP posts; it refuses the others (PostError::kUnsupported).
constexpr bool rocev2_supports(Verb v) {
  return v == Verb::kWrite || v == Verb::kWriteImm || v == Verb::kSend || v == Verb::kSendImm;
}

const OperationInfo& operation_info(Operation op);
const char* operation_name(Operation op);  // "write", "write_imm", "read", "send", "fetch_add", "cmp_swap"
std::optional<Operation> parse_operation(std::string_view name);
inline Verb verb_of(Operation op) { return operation_info(op).verb; }
inline bool is_atomic(Operation op) { return op == Operation::kFetchAdd || op == Operation::kCmpSwap; }
inline bool runs_on_rocev2(Operation op) { return rocev2_supports(verb_of(op)); }

// Every operation's name, in table order (for "one of" checks).
std::vector<std::string> operation_name_list();
// The names joined by separator ("write, write_imm, read, ..."); with
// rocev2_only, only those RoCEv2 runs ("write | write_imm | send").
std::string operation_names(std::string_view separator, bool rocev2_only = false);

}  // namespace metaroce::transport
