// metarocectl memory list/register/deregister (registered memory regions)
// and the registration of the `memory` noun (add_memory_commands).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "client.h"
#include "commands.h"
#include "render.h"
#include "units.h"

namespace v1 = metaroce::v1;

namespace metarocectl {
namespace {

// ---- memory -----------------------------------------------------------------

void add_region_row(Table& table, const v1::RegionInfo& region) {
  table.add_row({fmt::format("{}", region.key()), fmt::format("0x{:x}", region.addr()),
                 format_size(region.length_bytes()), join(region.access(), ","), region.owner()});
}

Table region_table() {
  Table table({"key", "addr", "length", "access", "owner"});
  table.right_align({0, 2});
  return table;
}

int cmd_memory_list(Invocation& inv) {
  Client& c = inv.client();
  const auto list = c.call<v1::ListRegionsResponse>(
      "Memory.List", [&](auto* ctx, auto* r) { return c.memory().List(ctx, v1::ListRegionsRequest{}, r); });
  if (inv.json) {
    print_json(list);
    return kExitOk;
  }
  Table table = region_table();
  for (const v1::RegionInfo& region : list.regions()) add_region_row(table, region);
  print(table.render());
  return kExitOk;
}

int cmd_memory_register(Invocation& inv, const std::string& length, const std::string& access) {
  v1::RegisterRegionRequest request;
  request.set_length_bytes(parse_size_bytes("--length", length));
  static const std::vector<std::string> kAccess = {"local_write", "remote_write", "remote_read", "remote_atomic"};
  for (const std::string& item : split_list(access)) {
    if (std::find(kAccess.begin(), kAccess.end(), item) == kAccess.end()) {
      throw UsageError(fmt::format(
          "--access: unknown access \"{}\" (allowed: local_write, remote_write, remote_read, remote_atomic; "
          "got \"{}\")",
          item, access));
    }
    request.add_access(item);
  }
  Client& c = inv.client();
  const auto region = c.call<v1::RegionInfo>(
      "Memory.Register", [&](auto* ctx, auto* r) { return c.memory().Register(ctx, request, r); });
  if (inv.json) {
    print_json(region);
    return kExitOk;
  }
  Table table = region_table();
  add_region_row(table, region);
  print(table.render());
  return kExitOk;
}

int cmd_memory_deregister(Invocation& inv, std::uint32_t key) {
  v1::DeregisterRegionRequest request;
  request.set_key(key);
  Client& c = inv.client();
  const auto response = c.call<v1::DeregisterRegionResponse>(
      "Memory.Deregister", [&](auto* ctx, auto* r) { return c.memory().Deregister(ctx, request, r); });
  if (inv.json) print_json(response);
  else print(fmt::format("deregistered region {}", key));
  return kExitOk;
}

}  // namespace

void add_memory_commands(CLI::App& app, Context& ctx) {
  Invocation& inv = ctx.inv;
  Commands& commands = ctx.commands;

  // Memory
  CLI::App* memory = commands.group(&app, "memory", "registered memory regions", "metarocectl memory list");
  commands.add(memory, "list", "registered regions", "metarocectl memory list",
               [&inv] { return cmd_memory_list(inv); });
  std::string& region_length = ctx.keep<std::string>();
  std::string& region_access = ctx.keep<std::string>();
  CLI::App* reg = commands.add(memory, "register", "allocate and register a region",
                               "metarocectl memory register --length 1M --access remote_write,remote_read",
                               [&inv, &region_length, &region_access] {
                                 return cmd_memory_register(inv, region_length, region_access);
                               });
  reg->add_option("--length", region_length, "size, e.g. 64K, 1M")->required();
  reg->add_option("--access", region_access,
                  "comma-separated: local_write, remote_write, remote_read, remote_atomic");
  std::uint32_t& region_key = ctx.keep<std::uint32_t>();
  commands.add(memory, "deregister", "deregister a region", "metarocectl memory deregister 3",
               [&inv, &region_key] { return cmd_memory_deregister(inv, region_key); })
      ->add_option("key", region_key, "region key")
      ->required();
}

}  // namespace metarocectl
