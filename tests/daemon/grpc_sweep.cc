#include "grpc_sweep.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/sync_stream.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include "metaroce/v1/capture.grpc.pb.h"
#include "metaroce/v1/connection.grpc.pb.h"
#include "metaroce/v1/daemon.grpc.pb.h"
#include "metaroce/v1/fabric.grpc.pb.h"
#include "metaroce/v1/traffic.grpc.pb.h"

namespace daemon_test {
namespace {

namespace pb = google::protobuf;
using Msg = pb::Message;

const char* const kServices[] = {"metaroce.v1.Daemon", "metaroce.v1.Connections", "metaroce.v1.Peer",
                                 "metaroce.v1.Memory", "metaroce.v1.Fabric", "metaroce.v1.Traffic",
                                 "metaroce.v1.Capture"};

// A hostile value for one field, applied to a message.
struct Hostile {
  std::string name;
  bool undecodable = false;  // the server cannot parse the request at all
  std::function<void(Msg&, const pb::FieldDescriptor*)> set;
};

void set_one(Msg& m, const pb::FieldDescriptor* f, const std::function<void(Msg&, const pb::FieldDescriptor*, bool)>& put,
             size_t repeat) {
  if (f->is_repeated())
    for (size_t i = 0; i < repeat; ++i) put(m, f, true);
  else
    put(m, f, false);
}

std::vector<Hostile> hostile_values(const pb::FieldDescriptor* f) {
  using FD = pb::FieldDescriptor;
  std::vector<Hostile> out;
  auto add = [&](std::string name, std::function<void(Msg&, const FD*, bool)> put, size_t repeat = 1,
                 bool undecodable = false) {
    out.push_back({std::move(name), undecodable,
                   [put, repeat](Msg& m, const FD* fd) { set_one(m, fd, put, repeat); }});
  };
  auto ints = [&](auto lo, auto hi, auto setter, auto adder) {
    add("min", [=](Msg& m, const FD* fd, bool rep) { rep ? adder(m, fd, lo) : setter(m, fd, lo); });
    add("max", [=](Msg& m, const FD* fd, bool rep) { rep ? adder(m, fd, hi) : setter(m, fd, hi); });
  };
  switch (f->cpp_type()) {
    case FD::CPPTYPE_INT32:
      ints(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(),
           [](Msg& m, const FD* fd, int32_t v) { m.GetReflection()->SetInt32(&m, fd, v); },
           [](Msg& m, const FD* fd, int32_t v) { m.GetReflection()->AddInt32(&m, fd, v); });
      break;
    case FD::CPPTYPE_INT64:
      ints(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
           [](Msg& m, const FD* fd, int64_t v) { m.GetReflection()->SetInt64(&m, fd, v); },
           [](Msg& m, const FD* fd, int64_t v) { m.GetReflection()->AddInt64(&m, fd, v); });
      break;
    case FD::CPPTYPE_UINT32:
      ints(uint32_t{1}, std::numeric_limits<uint32_t>::max(),
           [](Msg& m, const FD* fd, uint32_t v) { m.GetReflection()->SetUInt32(&m, fd, v); },
           [](Msg& m, const FD* fd, uint32_t v) { m.GetReflection()->AddUInt32(&m, fd, v); });
      break;
    case FD::CPPTYPE_UINT64:
      ints(uint64_t{1}, std::numeric_limits<uint64_t>::max(),
           [](Msg& m, const FD* fd, uint64_t v) { m.GetReflection()->SetUInt64(&m, fd, v); },
           [](Msg& m, const FD* fd, uint64_t v) { m.GetReflection()->AddUInt64(&m, fd, v); });
      break;
    case FD::CPPTYPE_DOUBLE:
      for (double v : {std::nan(""), std::numeric_limits<double>::infinity(), -1e300})
        add("double " + std::to_string(v), [v](Msg& m, const FD* fd, bool rep) {
          rep ? m.GetReflection()->AddDouble(&m, fd, v) : m.GetReflection()->SetDouble(&m, fd, v);
        });
      break;
    case FD::CPPTYPE_FLOAT:
      add("float nan", [](Msg& m, const FD* fd, bool rep) {
        rep ? m.GetReflection()->AddFloat(&m, fd, std::nanf("")) : m.GetReflection()->SetFloat(&m, fd, std::nanf(""));
      });
      break;
    case FD::CPPTYPE_BOOL:
      add("true", [](Msg& m, const FD* fd, bool rep) {
        rep ? m.GetReflection()->AddBool(&m, fd, true) : m.GetReflection()->SetBool(&m, fd, true);
      });
      break;
    case FD::CPPTYPE_ENUM:
      add("unknown enum 999", [](Msg& m, const FD* fd, bool rep) {
        rep ? m.GetReflection()->AddEnumValue(&m, fd, 999) : m.GetReflection()->SetEnumValue(&m, fd, 999);
      });
      break;
    case FD::CPPTYPE_STRING: {
      auto str = [](std::string v) {
        return [v](Msg& m, const FD* fd, bool rep) {
          rep ? m.GetReflection()->AddString(&m, fd, v) : m.GetReflection()->SetString(&m, fd, v);
        };
      };
      add("4 KiB string", str(std::string(4096, 'x')));
      add("control characters", str("unix:///x\n\r\x01y"));
      if (f->type() == FD::TYPE_STRING) add("invalid UTF-8", str("\xff\xfe\xc3"), 1, true);
      if (f->is_repeated()) add("200 entries", str("unix:///nowhere.sock"), 200);
      break;
    }
    case FD::CPPTYPE_MESSAGE: break;  // recursed into by the caller
  }
  if (f->is_repeated() && f->cpp_type() != FD::CPPTYPE_STRING && f->cpp_type() != FD::CPPTYPE_MESSAGE && !out.empty()) {
    Hostile many = out.back();
    many.name += " x 200";
    auto inner = many.set;
    many.set = [inner](Msg& m, const FD* fd) {
      for (int i = 0; i < 200; ++i) inner(m, fd);
    };
    out.push_back(many);
  }
  return out;
}

// The requests for one method: (case name, request, undecodable).
struct Case {
  std::string name;
  std::unique_ptr<Msg> request;
  bool undecodable = false;
};

std::vector<Case> cases_for(const pb::Descriptor* in) {
  const Msg* proto = pb::MessageFactory::generated_factory()->GetPrototype(in);
  std::vector<Case> out;
  out.push_back({"empty", std::unique_ptr<Msg>(proto->New()), false});
  for (int i = 0; i < in->field_count(); ++i) {
    const pb::FieldDescriptor* f = in->field(i);
    if (f->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      for (const Hostile& h : hostile_values(f)) {
        std::unique_ptr<Msg> m(proto->New());
        h.set(*m, f);
        out.push_back({f->name() + "=" + h.name, std::move(m), h.undecodable});
      }
      continue;
    }
    if (f->is_map()) continue;  // no request has a map
    const pb::Descriptor* sub = f->message_type();
    for (int j = 0; j < sub->field_count(); ++j) {
      const pb::FieldDescriptor* g = sub->field(j);
      if (g->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;  // one level deep
      for (const Hostile& h : hostile_values(g)) {
        std::unique_ptr<Msg> m(proto->New());
        Msg* inner = f->is_repeated() ? m->GetReflection()->AddMessage(m.get(), f)
                                      : m->GetReflection()->MutableMessage(m.get(), f);
        h.set(*inner, g);
        out.push_back({f->name() + "." + g->name() + "=" + h.name, std::move(m), h.undecodable});
      }
    }
  }
  return out;
}

}  // namespace

SweepResult sweep_every_method(const std::string& address, const std::string& token) {
  // Touch a message of each generated file so the file is linked and in the pool.
  (void)metaroce::v1::GetInfoRequest::descriptor();
  (void)metaroce::v1::CreateConnectionRequest::descriptor();
  (void)metaroce::v1::ShowFabricRequest::descriptor();
  (void)metaroce::v1::StartJobRequest::descriptor();
  (void)metaroce::v1::StartCaptureRequest::descriptor();
  SweepResult res;
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto prepare = [&](grpc::ClientContext& ctx, int ms) {
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
  };
  auto alive = [&] {
    grpc::ClientContext ctx;
    prepare(ctx, 5000);
    metaroce::v1::GetInfoRequest q;
    metaroce::v1::DaemonInfo info;
    return metaroce::v1::Daemon::NewStub(channel)->GetInfo(&ctx, q, &info).ok();
  };
  for (const char* service : kServices) {
    const pb::ServiceDescriptor* sd = pb::DescriptorPool::generated_pool()->FindServiceByName(service);
    if (!sd) {
      res.problems.push_back(std::string(service) + ": not in the descriptor pool");
      continue;
    }
    for (int mi = 0; mi < sd->method_count(); ++mi) {
      const pb::MethodDescriptor* md = sd->method(mi);
      const std::string path = "/" + sd->full_name() + "/" + md->name();
      for (Case& c : cases_for(md->input_type())) {
        const pb::Message* out_proto = pb::MessageFactory::generated_factory()->GetPrototype(md->output_type());
        std::unique_ptr<Msg> reply(out_proto->New());
        grpc::ClientContext ctx;
        prepare(ctx, 15000);
        grpc::Status s;
        if (md->server_streaming()) {
          const grpc::internal::RpcMethod method(path.c_str(), grpc::internal::RpcMethod::SERVER_STREAMING);
          std::unique_ptr<grpc::ClientReader<Msg>> reader(
              grpc::internal::ClientReaderFactory<Msg>::Create(channel.get(), method, &ctx, *c.request));
          if (reader->Read(reply.get())) ctx.TryCancel();  // one message is enough: the stream works
          s = reader->Finish();
          if (s.error_code() == grpc::StatusCode::CANCELLED) s = grpc::Status::OK;
        } else {
          const grpc::internal::RpcMethod method(path.c_str(), grpc::internal::RpcMethod::NORMAL_RPC);
          s = grpc::internal::BlockingUnaryCall<Msg, Msg>(channel.get(), method, &ctx, *c.request, reply.get());
        }
        ++res.calls;
        const auto code = s.error_code();
        res.codes[c.undecodable ? "undecodable:" + std::to_string(code) : std::to_string(code)]++;
        if (code == grpc::StatusCode::OK) res.accepted.push_back(md->full_name() + " " + c.name);
        if (c.undecodable && res.undecodable_message.empty()) res.undecodable_message = "'" + s.error_message() + "'";
        const std::string where = md->full_name() + " " + c.name + ": ";
        const std::string msg = s.error_message();
        if (!c.undecodable && (code == grpc::StatusCode::INTERNAL || code == grpc::StatusCode::UNKNOWN))
          res.problems.push_back(where + "unhandled error, code " + std::to_string(code) + ": " + msg.substr(0, 200));
        // An undecodable request is the caller's error, said as such and naming the method.
        if (c.undecodable && (code != grpc::StatusCode::INVALID_ARGUMENT || msg.find(md->name()) == std::string::npos))
          res.problems.push_back(where + "undecodable request answered with code " + std::to_string(code) + " '" +
                                 msg.substr(0, 200) + "', not INVALID_ARGUMENT naming the method");
        if (code == grpc::StatusCode::DEADLINE_EXCEEDED) res.problems.push_back(where + "no answer within 15 s");
        if (msg.size() > 2048 || msg.find('\n') != std::string::npos)
          res.problems.push_back(where + "message not one short line (" + std::to_string(msg.size()) + " bytes)");
        if (!alive()) {
          res.problems.push_back(where + "the daemon stopped answering");
          return res;
        }
      }
    }
  }
  return res;
}

}  // namespace daemon_test
