#include "metaroce/api/operation_codec.h"

#include <utility>

namespace metaroce::api {
namespace {

using transport::Operation;

constexpr std::pair<Operation, v1::Operation> kApiOperations[] = {
    {Operation::kWrite, v1::OPERATION_WRITE},         {Operation::kWriteImm, v1::OPERATION_WRITE_IMM},
    {Operation::kRead, v1::OPERATION_READ},           {Operation::kSend, v1::OPERATION_SEND},
    {Operation::kFetchAdd, v1::OPERATION_FETCH_ADD}, {Operation::kCmpSwap, v1::OPERATION_CMP_SWAP},
};
static_assert(std::size(kApiOperations) == transport::kOperations.size(), "every operation has an API value");

}  // namespace

v1::Operation encode_operation(Operation op) {
  for (const auto& [t, a] : kApiOperations)
    if (t == op) return a;
  return v1::OPERATION_UNSPECIFIED;
}

std::optional<Operation> decode_operation(v1::Operation op) {
  if (op == v1::OPERATION_UNSPECIFIED) return Operation::kWrite;
  for (const auto& [t, a] : kApiOperations)
    if (a == op) return t;
  return std::nullopt;
}

}  // namespace metaroce::api
