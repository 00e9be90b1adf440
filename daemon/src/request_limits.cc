#include "request_limits.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

namespace metaroce::daemon {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

grpc::Status bad(const std::string& field, const std::string& what) {
  return {grpc::StatusCode::INVALID_ARGUMENT, field + ": " + what};
}

grpc::Status check_string(const std::string& field, const std::string& s) {
  if (s.size() > kMaxRequestStringBytes)
    return bad(field, "at most " + std::to_string(kMaxRequestStringBytes) + " bytes (got " + std::to_string(s.size()) +
                          ", starting " + quote_value(s) + ")");
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return bad(field, "must not hold control characters (got " + quote_value(s) + ")");
  return grpc::Status::OK;
}

grpc::Status check(const Message& m, const std::string& prefix) {
  const auto* refl = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  refl->ListFields(m, &fields);  // set fields only: unset strings and empty lists cost nothing
  for (const FieldDescriptor* f : fields) {
    const std::string name = prefix + f->name();
    if (f->is_map()) {
      // A map is a repeated message of {key, value}: checked like one, named by index.
      const int n = refl->FieldSize(m, f);
      if (n > static_cast<int>(kMaxRepeatedStrings))
        return bad(name, "at most " + std::to_string(kMaxRepeatedStrings) + " entries (got " + std::to_string(n) + ")");
    }
    if (f->is_repeated()) {
      const int n = refl->FieldSize(m, f);
      if (f->type() == FieldDescriptor::TYPE_STRING || f->type() == FieldDescriptor::TYPE_BYTES) {
        if (n > static_cast<int>(kMaxRepeatedStrings))
          return bad(name, "at most " + std::to_string(kMaxRepeatedStrings) + " entries (got " + std::to_string(n) + ")");
        for (int i = 0; i < n; ++i)
          if (auto s = check_string(name + "[" + std::to_string(i) + "]", refl->GetRepeatedString(m, f, i)); !s.ok())
            return s;
      } else if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
        for (int i = 0; i < n; ++i)
          if (auto s = check(refl->GetRepeatedMessage(m, f, i), name + "[" + std::to_string(i) + "]."); !s.ok())
            return s;
      }
      continue;
    }
    if (f->type() == FieldDescriptor::TYPE_STRING || f->type() == FieldDescriptor::TYPE_BYTES) {
      if (auto s = check_string(name, refl->GetString(m, f)); !s.ok()) return s;
    } else if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
      if (auto s = check(refl->GetMessage(m, f), name + "."); !s.ok()) return s;
    }
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status check_request_strings(const Message& request) { return check(request, ""); }

std::string quote_value(std::string_view value) {
  std::string out = "'";
  const size_t n = std::min(value.size(), kMaxQuotedValueChars);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    out += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
  }
  out += "'";
  if (value.size() > n) out += "... (" + std::to_string(value.size()) + " bytes)";
  return out;
}

namespace {

class UndecodableRequestInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit UndecodableRequestInterceptor(const char* method) : method_(method ? method : "") {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
    using Hook = grpc::experimental::InterceptionHookPoints;
    // The server sets a null message here when the request's bytes did not decode.
    if (m->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE) && m->GetRecvMessage() == nullptr) undecodable_ = true;
    if (m->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS) && undecodable_ &&
        m->GetSendStatus().error_code() == grpc::StatusCode::INTERNAL)
      m->ModifySendStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                       "request: not a valid " + quote_value(method_) +
                                           " request (the bytes do not decode as its protobuf message; "
                                           "string fields must be UTF-8)"));
    m->Proceed();
  }

 private:
  std::string method_;
  bool undecodable_ = false;
};

}  // namespace

grpc::experimental::Interceptor* UndecodableRequestInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new UndecodableRequestInterceptor(info->method());
}

}  // namespace metaroce::daemon
