// metarocectl fabric show/set/down/up/reset/timeline (the lossy-fabric
// emulator), the CLI11 options of the fabric keys, and the registration of
// the `fabric` noun (add_fabric_commands).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "client.h"
#include "commands.h"
#include "fabric_args.h"
#include "render.h"
#include "units.h"

namespace v1 = metaroce::v1;

namespace metarocectl {
namespace {

// ---- fabric -----------------------------------------------------------------

// CLI11 options for a list of fabric keys, collected back into ArgValues.
class FabricOptions {
 public:
  void add(CLI::App* sub, const std::vector<FabricFlagInfo>& infos, const std::string& group) {
    for (const FabricFlagInfo& info : infos) {
      Entry& entry = entries_[std::string(info.key)];
      const std::string name = "--" + std::string(info.key);
      if (info.is_switch) {
        entry.option = sub->add_flag(name, entry.switch_value, std::string(info.help));
      } else {
        entry.option = sub->add_option(name, entry.text, std::string(info.help));
      }
      entry.option->group(group);
      entry.is_switch = info.is_switch;
    }
  }
  ArgValues values() const {
    ArgValues values;
    for (const auto& [key, entry] : entries_) {
      if (entry.option->count() == 0) continue;
      values[key] = entry.is_switch ? (entry.switch_value ? "true" : "false") : entry.text;
    }
    return values;
  }

 private:
  struct Entry {
    CLI::Option* option = nullptr;
    std::string text;
    bool switch_value = false;
    bool is_switch = false;
  };
  std::map<std::string, Entry> entries_;
};

std::string format_link_delay(const v1::LinkState& link) {
  std::string out = format_duration_ns(link.prop_delay_ns() + link.delay_ns());
  if (link.jitter_ns() > 0) out += "+/-" + format_duration_ns(link.jitter_ns());
  return out;
}

std::string format_link_loss(const v1::LinkState& link) {
  const std::string& kind = link.loss_kind();
  if (kind.empty() || kind == "none" || kind == "bernoulli") return format_percent(link.loss_probability());
  if (kind == "correlated") return format_percent(link.loss_probability()) + " corr";
  if (kind == "gilbert_elliott") return "GE";
  if (kind == "four_state") return "4-state";
  return kind;
}

int cmd_fabric_show(Invocation& inv) {
  Client& c = inv.client();
  const auto state = c.call<v1::FabricState>(
      "Fabric.Show", [&](auto* ctx, auto* r) { return c.fabric().Show(ctx, v1::ShowFabricRequest{}, r); });
  if (inv.json) {
    print_json(state);
    return kExitOk;
  }
  // Causes in name order, so the line reads the same from one call to the next.
  std::map<std::string, std::uint64_t> causes(state.drops_by_cause().begin(), state.drops_by_cause().end());
  std::string by_cause;
  for (const auto& [cause, n] : causes) by_cause += fmt::format("{}{} {}", by_cause.empty() ? " (" : ", ", cause, n);
  if (!by_cause.empty()) by_cause += ")";
  print(fmt::format("fabric: {} hosts, {} planes, {} ECMP links per host pair; time {}; forwarded {}, dropped {}{};"
                    " timeline events pending {}\n",
                    state.hosts(), state.planes(), state.ecmp_links(), format_duration_ns(state.time_ns()),
                    state.frames_forwarded(), state.frames_dropped(), by_cause, state.timeline_pending()));
  Table table({"plane", "ecmp", "hosts", "dir", "up", "rate", "delay", "loss", "dup", "corrupt", "reorder", "in",
               "out", "drops", "marks"});
  table.right_align({0, 1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
  for (const v1::LinkState& link : state.links()) {
    std::string up = link.up() ? "up" : "DOWN";
    if (link.flap_period_ns() > 0) up += " flap " + format_duration_ns(link.flap_period_ns());
    const std::uint64_t drops = link.drops_random_loss() + link.drops_queue_overflow() + link.drops_link_down();
    table.add_row({fmt::format("{}", link.plane()), fmt::format("{}", link.ecmp()),
                   fmt::format("{}-{}", link.host_a(), link.host_b()), link.direction(), up,
                   format_rate_short(link.rate_bps()), format_link_delay(link), format_link_loss(link),
                   format_percent(link.duplicate_probability()), format_percent(link.corrupt_probability()),
                   format_percent(link.reorder_probability()), fmt::format("{}", link.packets_in()),
                   fmt::format("{}", link.packets_out()), fmt::format("{}", drops),
                   fmt::format("{}", link.ecn_marks())});
  }
  print(table.render());
  return kExitOk;
}

void print_links_changed(Invocation& inv, const v1::SetLinksResponse& response) {
  if (inv.json) print_json(response);
  else
    print(fmt::format("{} link{} changed (fabric time {})", response.links_changed(),
                      response.links_changed() == 1 ? "" : "s", format_duration_ns(response.applied_at_ns())));
}

int cmd_fabric_set(Invocation& inv, const ArgValues& selector_values, const ArgValues& patch_values) {
  if (patch_values.empty()) {
    throw UsageError("fabric set: no settings given (e.g. --loss 1%, --rate 25G; see metarocectl fabric set --help)");
  }
  v1::SetLinksRequest request;
  *request.mutable_selector() = build_link_selector(selector_values, flag_namer);
  *request.mutable_patch() = build_link_patch(patch_values, flag_namer);
  Client& c = inv.client();
  const auto response = c.call<v1::SetLinksResponse>(
      "Fabric.Set", [&](auto* ctx, auto* r) { return c.fabric().Set(ctx, request, r); });
  print_links_changed(inv, response);
  return kExitOk;
}

int cmd_fabric_up_down(Invocation& inv, const ArgValues& selector_values, bool up) {
  v1::LinkStateRequest request;
  *request.mutable_selector() = build_link_selector(selector_values, flag_namer);
  Client& c = inv.client();
  const auto response = c.call<v1::SetLinksResponse>(up ? "Fabric.Up" : "Fabric.Down", [&](auto* ctx, auto* r) {
    return up ? c.fabric().Up(ctx, request, r) : c.fabric().Down(ctx, request, r);
  });
  print_links_changed(inv, response);
  return kExitOk;
}

int cmd_fabric_reset(Invocation& inv) {
  Client& c = inv.client();
  const auto response = c.call<v1::SetLinksResponse>(
      "Fabric.Reset", [&](auto* ctx, auto* r) { return c.fabric().Reset(ctx, v1::ResetFabricRequest{}, r); });
  print_links_changed(inv, response);
  return kExitOk;
}

int cmd_fabric_timeline(Invocation& inv, const std::string& file) {
  const v1::LoadTimelineRequest request = load_timeline_file(file);
  Client& c = inv.client();
  const auto response = c.call<v1::LoadTimelineResponse>(
      "Fabric.LoadTimeline", [&](auto* ctx, auto* r) { return c.fabric().LoadTimeline(ctx, request, r); });
  if (inv.json) print_json(response);
  else
    print(fmt::format("loaded {} timeline event{} (relative to fabric time {})", response.events(),
                      response.events() == 1 ? "" : "s", format_duration_ns(response.base_ns())));
  return kExitOk;
}

}  // namespace

void add_fabric_commands(CLI::App& app, Context& ctx) {
  Invocation& inv = ctx.inv;
  Commands& commands = ctx.commands;

  // Fabric
  CLI::App* fabric = commands.group(&app, "fabric", "the lossy-fabric emulator (fabric role)",
                                    "metarocectl fabric set --plane 1 --loss 1%");
  commands.add(fabric, "show", "every ECMP link's settings and counters", "metarocectl fabric show",
               [&inv] { return cmd_fabric_show(inv); });
  FabricOptions& set_selector = ctx.keep<FabricOptions>();
  FabricOptions& set_patch = ctx.keep<FabricOptions>();
  FabricOptions& down_selector = ctx.keep<FabricOptions>();
  FabricOptions& up_selector = ctx.keep<FabricOptions>();
  CLI::App* set = commands.add(
      fabric, "set", "change settings of the selected links (all or none)",
      "metarocectl fabric set --plane 1 --direction a_to_b --loss-model gilbert_elliott --ge-p 1% --ge-r 30%",
      [&inv, &set_selector, &set_patch] { return cmd_fabric_set(inv, set_selector.values(), set_patch.values()); });
  set_selector.add(set, selector_flag_infos(), "Selector (default: every link)");
  set_patch.add(set, patch_flag_infos(), "Settings (at least one)");
  CLI::App* down = commands.add(fabric, "down", "take the selected links down (blackhole)",
                                "metarocectl fabric down --plane 0 --hosts 0,1",
                                [&inv, &down_selector] {
                                  return cmd_fabric_up_down(inv, down_selector.values(), false);
                                });
  down_selector.add(down, selector_flag_infos(), "Selector (default: every link)");
  CLI::App* up = commands.add(fabric, "up", "bring the selected links up", "metarocectl fabric up --plane 0",
                              [&inv, &up_selector] { return cmd_fabric_up_down(inv, up_selector.values(), true); });
  up_selector.add(up, selector_flag_infos(), "Selector (default: every link)");
  commands.add(fabric, "reset", "back to the configured settings, every link up", "metarocectl fabric reset",
               [&inv] { return cmd_fabric_reset(inv); });
  std::string& timeline_file = ctx.keep<std::string>();
  CLI::App* timeline = commands.add(fabric, "timeline", "load a timeline of changes (YAML)",
                                    "metarocectl fabric timeline plane1-outage.yaml",
                                    [&inv, &timeline_file] { return cmd_fabric_timeline(inv, timeline_file); });
  timeline->add_option("file", timeline_file, "timeline YAML file")->required()->check(CLI::ExistingFile);
  timeline->footer(example("metarocectl fabric timeline plane1-outage.yaml") + R"(

Timeline file:
  events:
    - {at: 2s, plane: 1, action: down, label: plane 1 fails}
    - {at: 4s, plane: 1, action: up}
    - {at: 5s, plane: 0, direction: a_to_b, action: set, loss: 1%, delay: 100us}
  Keys: at (required), action (set | down | up, required), label, plane, ecmp,
  direction, hosts ("A,B") or host_a/host_b, and for `set` any setting of
  `fabric set` without its dashes (loss, prop_delay, loss_model, ge_p, ...).)");
}

}  // namespace metarocectl
