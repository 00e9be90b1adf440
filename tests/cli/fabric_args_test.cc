// Fabric flags -> LinkSelector / LinkPatch, and timeline YAML -> LoadTimelineRequest.
#include "fabric_args.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "metaroce/emulator/fabric.h"
#include "units.h"

namespace metarocectl {
namespace {

namespace v1 = metaroce::v1;

// Names of the fields a message has set (presence), e.g. {"loss_probability"}.
std::set<std::string> set_fields(const google::protobuf::Message& message) {
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  std::set<std::string> names;
  for (const auto* field : fields) names.insert(field->name());
  return names;
}

std::string patch_error(const ArgValues& values) {
  try {
    build_link_patch(values, flag_namer);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

std::string timeline_error(const std::string& yaml) {
  try {
    parse_timeline_yaml(yaml, "plan.yaml");
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError for:\n" << yaml;
  return "";
}

TEST(LinkPatch, SetsOnlyTheNamedFields) {
  v1::LinkPatch patch = build_link_patch({{"loss", "1%"}}, flag_namer);
  EXPECT_EQ(set_fields(patch), (std::set<std::string>{"loss_probability"}));
  EXPECT_DOUBLE_EQ(patch.loss_probability(), 0.01);

  patch = build_link_patch({{"rate", "25G"}, {"prop-delay", "2us"}}, flag_namer);
  EXPECT_EQ(set_fields(patch), (std::set<std::string>{"rate_bps", "prop_delay_ns"}));
  EXPECT_DOUBLE_EQ(patch.rate_bps(), 25e9);
  EXPECT_EQ(patch.prop_delay_ns(), 2000);

  patch = build_link_patch({{"jitter", "10us"}}, flag_namer);
  EXPECT_EQ(set_fields(patch), (std::set<std::string>{"delay"}));
  EXPECT_EQ(set_fields(patch.delay()), (std::set<std::string>{"jitter_ns"}));
  EXPECT_EQ(patch.delay().jitter_ns(), 10'000);

  patch = build_link_patch({{"holdback", "0.5%"}, {"holdback-delay", "50us"}, {"duplicate", "0.1"},
                            {"corrupt", "0"}},
                           flag_namer);
  EXPECT_EQ(set_fields(patch), (std::set<std::string>{"reorder_probability", "reorder_delay_ns",
                                                      "duplicate_probability", "corrupt_probability"}));
  EXPECT_DOUBLE_EQ(patch.reorder_probability(), 0.005);
  EXPECT_EQ(patch.reorder_delay_ns(), 50'000);
  EXPECT_TRUE(patch.has_corrupt_probability());  // explicitly 0 is still "set"

  patch = build_link_patch({{"queue-bytes", "256K"}, {"queue-packets", "100"}, {"ecn-threshold", "0"}}, flag_namer);
  EXPECT_EQ(patch.queue_limit_bytes(), 262144u);
  EXPECT_EQ(patch.queue_limit_packets(), 100u);
  EXPECT_TRUE(patch.has_ecn_threshold_bytes());
  EXPECT_EQ(set_fields(patch).size(), 3u);
}

TEST(LinkPatch, DelayReorderAndFlap) {
  v1::LinkPatch patch = build_link_patch({{"delay", "100us"}, {"jitter", "10us"}, {"distribution", "normal"},
                                          {"delay-correlation", "25%"}, {"allow-reorder", "true"}},
                                         flag_namer);
  EXPECT_EQ(patch.delay().delay_ns(), 100'000);
  EXPECT_EQ(patch.delay().distribution(), "normal");
  EXPECT_DOUBLE_EQ(patch.delay().correlation(), 0.25);
  EXPECT_TRUE(patch.delay().allow_reorder());

  patch = build_link_patch({{"reorder", "25%"}, {"reorder-gap", "5"}}, flag_namer);
  EXPECT_EQ(set_fields(patch), (std::set<std::string>{"reorder"}));
  EXPECT_DOUBLE_EQ(patch.reorder().probability(), 0.25);
  EXPECT_EQ(patch.reorder().gap(), 5u);

  patch = build_link_patch({{"flap-period", "1s"}, {"flap-down", "100ms"}}, flag_namer);
  EXPECT_EQ(patch.flap().period_ns(), 1'000'000'000);
  EXPECT_EQ(patch.flap().down_ns(), 100'000'000);
  patch = build_link_patch({{"flap-period", "0"}}, flag_namer);  // stops flapping
  EXPECT_TRUE(patch.has_flap());
  EXPECT_EQ(patch.flap().period_ns(), 0);
}

TEST(LinkPatch, LossModels) {
  v1::LinkPatch patch = build_link_patch(
      {{"loss-model", "gilbert_elliott"}, {"ge-p", "1%"}, {"ge-r", "30%"}}, flag_namer);
  EXPECT_EQ(set_fields(patch), (std::set<std::string>{"loss"}));
  EXPECT_EQ(patch.loss().kind(), "gilbert_elliott");
  EXPECT_DOUBLE_EQ(patch.loss().p(), 0.01);
  EXPECT_DOUBLE_EQ(patch.loss().r(), 0.30);
  EXPECT_DOUBLE_EQ(patch.loss().h(), 1.0);  // every packet lost in Bad
  EXPECT_DOUBLE_EQ(patch.loss().k(), 0.0);  // none lost in Good

  patch = build_link_patch({{"loss-model", "gilbert_elliott"}, {"ge-p", "1%"}, {"ge-k", "0.1%"}}, flag_namer);
  EXPECT_DOUBLE_EQ(patch.loss().r(), 1.0);
  EXPECT_DOUBLE_EQ(patch.loss().h(), 1.0);  // explicit, so k > 0 does not turn h = 0 into "no loss in Bad"
  EXPECT_DOUBLE_EQ(patch.loss().k(), 0.001);

  patch = build_link_patch({{"loss-model", "correlated"}, {"loss", "1%"}, {"loss-correlation", "25%"}}, flag_namer);
  EXPECT_EQ(patch.loss().kind(), "correlated");
  EXPECT_DOUBLE_EQ(patch.loss().probability(), 0.01);
  EXPECT_DOUBLE_EQ(patch.loss().correlation(), 0.25);
  EXPECT_FALSE(patch.has_loss_probability());

  patch = build_link_patch({{"loss-model", "four_state"}, {"ge-p", "0.1"}, {"ge-p14", "0.01"}}, flag_namer);
  EXPECT_DOUBLE_EQ(patch.loss().p(), 0.1);
  EXPECT_DOUBLE_EQ(patch.loss().r(), 1.0);
  EXPECT_DOUBLE_EQ(patch.loss().p14(), 0.01);

  patch = build_link_patch({{"loss-model", "none"}}, flag_namer);
  EXPECT_EQ(patch.loss().kind(), "none");
}

TEST(LinkPatch, RejectsProbabilitiesOutsideZeroOne) {
  for (const char* key : {"loss", "duplicate", "corrupt", "holdback", "reorder"}) {
    for (const char* bad : {"1.5", "101%", "-0.1"}) {
      const std::string message = patch_error({{key, bad}});
      EXPECT_EQ(message.rfind(std::string("--") + key + ": ", 0), 0u) << message;
      EXPECT_NE(message.find("[0, 1]"), std::string::npos) << message;
      EXPECT_NE(message.find(bad), std::string::npos) << message;
    }
  }
  EXPECT_NE(patch_error({{"loss-model", "gilbert_elliott"}, {"ge-p", "2"}}).find("--ge-p: "), std::string::npos);
  EXPECT_NE(patch_error({{"delay", "1ms"}, {"delay-correlation", "1"}}).find("--delay-correlation"),
            std::string::npos);
}

TEST(LinkPatch, RejectsInconsistentCombinations) {
  EXPECT_NE(patch_error({{"ge-p", "1%"}}).find("needs --loss-model"), std::string::npos);
  EXPECT_NE(patch_error({{"loss-model", "gilbert_elliott"}, {"ge-p", "1%"}, {"loss", "1%"}}).find("--loss: not used"),
            std::string::npos);
  EXPECT_NE(patch_error({{"loss-model", "bernoulli"}}).find("needs --loss"), std::string::npos);
  EXPECT_NE(patch_error({{"loss-model", "gilbert_elliott"}}).find("needs --ge-p"), std::string::npos);
  EXPECT_NE(patch_error({{"loss-model", "markov"}}).find("unknown loss model"), std::string::npos);
  EXPECT_NE(patch_error({{"flap-down", "1ms"}}).find("--flap-down: needs --flap-period"), std::string::npos);
  EXPECT_EQ(patch_error({{"flap-period", "1s"}, {"flap-down", "2s"}}),
            "--flap-period: needs period_ns = 0 (stop) or period_ns > down_ns >= 0 (got period 1000000000, down 2000000000)");
  EXPECT_NE(patch_error({{"reorder-gap", "5"}}).find("needs --reorder"), std::string::npos);
  EXPECT_NE(patch_error({{"distribution", "gamma"}}).find("--distribution: unknown"), std::string::npos);
  EXPECT_NE(patch_error({{"queue-bytes", "0"}}).find("--queue-bytes"), std::string::npos);
  EXPECT_NE(patch_error({{"bogus", "1"}}).find("--bogus: unknown setting"), std::string::npos);
}

// The CLI's pre-check is the emulator's validate (through the daemon's own
// decode): its message, under the flag that set the field.
TEST(LinkPatch, OutOfRangeIsTheEmulatorsMessageUnderTheFlag) {
  auto emulator_problem = [](auto set) {
    metaroce::emulator::LinkPatch p;
    set(p);
    const std::string m = *metaroce::emulator::validate(p);
    return m.substr(m.find(": "));
  };
  EXPECT_EQ(patch_error({{"rate", "2T"}}), "--rate" + emulator_problem([](auto& p) { p.rate_bps = 2e12; }));
  EXPECT_EQ(patch_error({{"queue-packets", "0"}}),
            "--queue-packets" + emulator_problem([](auto& p) { p.queue_limit_packets = 0; }));
  EXPECT_EQ(patch_error({{"queue-bytes", "0"}}), "--queue-bytes: must be in [1, 1073741824] (got 0)");
  EXPECT_EQ(patch_error({{"prop-delay", "2h"}}),
            "--prop-delay" + emulator_problem([](auto& p) { p.prop_delay_ns = 7'200'000'000'000; }));
  EXPECT_EQ(patch_error({{"holdback-delay", "2h"}}),
            "--holdback-delay" + emulator_problem([](auto& p) { p.reorder_delay_ns = 7'200'000'000'000; }));
  EXPECT_EQ(patch_error({{"loss-model", "gilbert_elliott"}, {"ge-p", "0.1"}, {"ge-r", "0"}}).rfind("--ge-r: ", 0), 0u);
  // A timeline event names the key as written in its file.
  EXPECT_EQ(timeline_error("- {at: 1s, action: set, queue_packets: 0}\n"),
            "plan.yaml: events[0].queue_packets" + emulator_problem([](auto& p) { p.queue_limit_packets = 0; }));
}

TEST(LinkSelector, UnsetMeansAll) {
  v1::LinkSelector selector = build_link_selector({}, flag_namer);
  EXPECT_TRUE(set_fields(selector).empty());

  selector = build_link_selector({{"plane", "1"}, {"direction", "a_to_b"}}, flag_namer);
  EXPECT_EQ(set_fields(selector), (std::set<std::string>{"plane", "direction"}));
  EXPECT_EQ(selector.plane(), 1u);

  selector = build_link_selector({{"plane", "0"}, {"hosts", "0,2"}}, flag_namer);
  EXPECT_TRUE(selector.has_plane());  // plane 0 is a real choice, not "all"
  EXPECT_EQ(selector.host_a(), 0u);
  EXPECT_EQ(selector.host_b(), 2u);
  EXPECT_FALSE(selector.has_ecmp());
}

TEST(LinkSelector, RejectsBadValues) {
  auto error_of = [](const ArgValues& values) {
    try {
      build_link_selector(values, flag_namer);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of({{"hosts", "0"}}).find("--hosts: not a host pair"), std::string::npos);
  EXPECT_NE(error_of({{"hosts", "a,b"}}).find("--hosts"), std::string::npos);
  EXPECT_NE(error_of({{"direction", "up"}}).find("both, a_to_b, b_to_a"), std::string::npos);
  EXPECT_NE(error_of({{"plane", "-1"}}).find("--plane"), std::string::npos);
  EXPECT_NE(error_of({{"host-a", "1"}}).find("give both or neither"), std::string::npos);
}

constexpr const char* kGoodTimeline = R"(
# plane 1 fails for two seconds, then gets lossy
events:
  - at: 2s
    plane: 1
    action: down
    label: plane 1 fails
  - {at: 4s, plane: 1, action: up}
  - at: 4.5s
    plane: 1
    direction: a_to_b
    hosts: 0,1
    action: set
    loss: 1%
    prop_delay: 10us
    loss_model:
  - at: 0
    host_a: 2
    host_b: 3
    action: set
    loss-model: gilbert_elliott
    ge_p: 0.01
    ge_r: 0.3
)";

TEST(Timeline, ParsesAGoodFile) {
  const v1::LoadTimelineRequest request = parse_timeline_yaml(kGoodTimeline, "plan.yaml");
  ASSERT_EQ(request.events_size(), 4);

  const v1::TimelineEvent& down = request.events(0);
  EXPECT_EQ(down.at_ns(), 2'000'000'000);
  EXPECT_EQ(down.action_case(), v1::TimelineEvent::kDown);
  EXPECT_TRUE(down.down());
  EXPECT_EQ(down.label(), "plane 1 fails");
  EXPECT_EQ(down.selector().plane(), 1u);
  EXPECT_FALSE(down.selector().has_ecmp());

  EXPECT_EQ(request.events(1).action_case(), v1::TimelineEvent::kUp);
  EXPECT_EQ(request.events(1).at_ns(), 4'000'000'000);

  const v1::TimelineEvent& set = request.events(2);
  EXPECT_EQ(set.at_ns(), 4'500'000'000);
  ASSERT_EQ(set.action_case(), v1::TimelineEvent::kSet);
  EXPECT_EQ(set_fields(set.set()), (std::set<std::string>{"loss_probability", "prop_delay_ns"}));
  EXPECT_DOUBLE_EQ(set.set().loss_probability(), 0.01);
  EXPECT_EQ(set.set().prop_delay_ns(), 10'000);
  EXPECT_EQ(set.selector().direction(), "a_to_b");
  EXPECT_EQ(set.selector().host_b(), 1u);

  const v1::TimelineEvent& ge = request.events(3);
  EXPECT_EQ(ge.at_ns(), 0);
  EXPECT_EQ(ge.selector().host_a(), 2u);
  EXPECT_EQ(ge.set().loss().kind(), "gilbert_elliott");
  EXPECT_DOUBLE_EQ(ge.set().loss().r(), 0.3);
}

TEST(Timeline, AcceptsABareList) {
  const auto request = parse_timeline_yaml("- {at: 1ms, action: down}\n", "plan.yaml");
  ASSERT_EQ(request.events_size(), 1);
  EXPECT_EQ(request.events(0).at_ns(), 1'000'000);
  EXPECT_TRUE(set_fields(request.events(0).selector()).empty());
}

TEST(Timeline, RejectsABadAction) {
  const std::string message = timeline_error("events:\n  - {at: 1s, action: down}\n  - {at: 2s, action: explode}\n");
  EXPECT_NE(message.find("plan.yaml: events[1].action"), std::string::npos) << message;
  EXPECT_NE(message.find("set, down, up"), std::string::npos) << message;
  EXPECT_NE(message.find("explode"), std::string::npos) << message;
}

TEST(Timeline, RejectsAMissingAt) {
  const std::string message = timeline_error("events:\n  - {plane: 1, action: down}\n");
  EXPECT_NE(message.find("plan.yaml: events[0]: at: missing"), std::string::npos) << message;
}

TEST(Timeline, RejectsOtherMistakes) {
  EXPECT_NE(timeline_error("events:\n  - {at: 1s}\n").find("action: missing"), std::string::npos);
  EXPECT_NE(timeline_error("events:\n  - {at: 1s, action: set}\n").find("at least one setting"), std::string::npos);
  EXPECT_NE(timeline_error("events:\n  - {at: 1s, action: down, loss: 1%}\n").find("need action set"),
            std::string::npos);
  EXPECT_NE(timeline_error("events:\n  - {at: 1s, action: set, los: 1%}\n").find("events[0].los: unknown key"),
            std::string::npos);
  // The YAML key is named as written, with the file and event index.
  EXPECT_NE(timeline_error("events:\n  - {at: 1s, action: set, prop_delay: 5}\n").find("plan.yaml: events[0].prop_delay:"),
            std::string::npos);
  EXPECT_NE(timeline_error("events:\n  - {at: 1s, action: set, loss: 2}\n").find("[0, 1]"), std::string::npos);
  EXPECT_NE(timeline_error("events:\n  - {at: 5, action: down}\n").find("events[0].at:"), std::string::npos);
  EXPECT_NE(timeline_error("events: [ {at: 1s\n").find("plan.yaml:"), std::string::npos);
  EXPECT_NE(timeline_error("hello: world\n").find("list of events"), std::string::npos);
  EXPECT_NE(timeline_error("events:\n  - 3\n").find("must be a map"), std::string::npos);
}

TEST(Timeline, MissingFileIsAUsageError) {
  EXPECT_THROW(load_timeline_file("/nonexistent/plan.yaml"), UsageError);
}

}  // namespace
}  // namespace metarocectl
