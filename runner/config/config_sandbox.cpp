// [sandbox] and [desk.sandbox]: read by walking the sandbox key table, so the bounds
// `deskd check` applies are the ones SandboxSpecBuilder holds.

#include <algorithm>

#include "runner/config/config_confinement.h"
#include "runner/config/config_reader.h"
#include "runner/config/config_values.h"
#include "sandbox/sandbox_keys.h"

namespace deskd::app::config_detail {

namespace {

// A desk's read-only paths replace [sandbox]'s: sharing is a grant a desk may do without.
void read_read_only_paths(TableReader& reader, const sandbox::SandboxKey& row, SandboxConfig& sandbox,
                          SandboxPlaces& places, LoadContext& context) {
  sandbox.read_only_paths.clear();
  places.read_only.clear();
  for (auto& path : reader.paths(row.key, "the read-only path")) {
    if (!expect_existing(context, path, PathKind::file_or_folder, "the read-only path")) continue;
    if (auto allowed = check_read_only_path(path.path); !allowed.ok()) {
      context.problems.add(path.position, allowed.error().what);
      continue;
    }
    if (std::find(sandbox.read_only_paths.begin(), sandbox.read_only_paths.end(), path.path) !=
        sandbox.read_only_paths.end()) {
      continue;
    }
    (void)row.store(sandbox, {.text = path.path.native()});
    places.read_only.push_back(std::move(path));
  }
}

// "none" is the one way to a desk without a quota; whether this deskd can give one is
// judged per desk, once [desk.sandbox] has been laid over [sandbox] (config_desk.cpp).
void read_quota(TableReader& reader, const sandbox::SandboxKey& row, const toml::node& node, SandboxConfig& sandbox,
                SandboxPlaces& places) {
  places.disk_quota = reader.where(node);
  if (const auto* text = node.as_string()) {
    if (text->get() == "none") {
      sandbox.disk_quota_bytes.reset();
    } else {
      reader.problem(node, "'" + std::string(row.key) + "' must be a whole number of MiB or \"none\", not " +
                               in_quotes(text->get()));
    }
  } else if (auto megabytes = reader.whole(row.key, static_cast<std::int64_t>(row.minimum),
                                           static_cast<std::int64_t>(row.maximum))) {
    sandbox.disk_quota_bytes = static_cast<std::uint64_t>(*megabytes) << 20;
  }
}

}  // namespace

// Walks the sandbox key table (sandbox/sandbox_keys.h): its bounds are the ones
// SandboxSpecBuilder holds, so `deskd check` finds a bad value before any sandbox is built.
void read_sandbox(TableReader& reader, SandboxConfig& sandbox, SandboxPlaces& places, LoadContext& context) {
  for (const sandbox::SandboxKey& row : sandbox::sandbox_keys()) {
    if (row.key.empty()) continue;
    const toml::node* node = reader.find(row.key);
    if (node == nullptr) continue;
    switch (row.value) {
      case sandbox::KeyValue::choice:
        if (auto chosen = reader.choice(row.key, row.choices)) (void)row.store(sandbox, {.text = *chosen});
        break;
      case sandbox::KeyValue::whole:
      case sandbox::KeyValue::mebibytes:
        if (auto number =
                reader.whole(row.key, static_cast<std::int64_t>(row.minimum), static_cast<std::int64_t>(row.maximum))) {
          const int shift = row.value == sandbox::KeyValue::mebibytes ? 20 : 0;
          (void)row.store(sandbox, {.whole = static_cast<std::uint64_t>(*number) << shift});
        }
        break;
      case sandbox::KeyValue::cpus:
        if (auto cpus = reader.number(
                row.key, {sandbox::limit_bounds::kMinimumCpus, false, sandbox::limit_bounds::kMaximumCpus})) {
          (void)row.store(sandbox, {.number = *cpus});
        }
        break;
      case sandbox::KeyValue::flag:
        if (auto given = reader.boolean(row.key)) sandbox.allow_supplementary_groups = *given;
        break;
      case sandbox::KeyValue::list:
        // A desk's list replaces [sandbox]'s: what a desk may reach is its own grant.
        if (auto entries = reader.strings(row.key)) {
          if (row.key == "allowed_hosts") places.allowed_hosts = reader.where(*node);
          if (row.key == "allowed_hosts") sandbox.allowed_hosts.clear();
          if (row.key == "environment") sandbox.environment_variables.clear();
          for (auto& [entry, entry_node] : *entries) {
            if (auto stored = row.store(sandbox, {.text = entry}); !stored.ok()) {
              reader.problem(*entry_node, "'" + std::string(row.key) + "': " + stored.error().what);
            }
          }
        }
        break;
      case sandbox::KeyValue::paths:
        // A desk's hidden paths add to [sandbox]'s, so one secret cannot be forgotten by a
        // desk. They reach the sandbox only as DeskConfig::hidden_paths, the desk's Confinement.
        if (row.store == nullptr) {
          for (auto& path : reader.paths(row.key, "the hidden path")) places.hidden.push_back(std::move(path));
        } else {
          read_read_only_paths(reader, row, sandbox, places, context);
        }
        break;
      case sandbox::KeyValue::quota: read_quota(reader, row, *node, sandbox, places); break;
      case sandbox::KeyValue::text: break;  // no such key in [sandbox]
    }
  }
}

}  // namespace deskd::app::config_detail
