#include "runner/app/sandbox_options.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "policy/confinement.h"
#include "runner/app/cli_values.h"
#include "sandbox/desk_preparation.h"
#include "sandbox/sandbox_keys.h"
#include "sandbox/uid_registry.h"

namespace deskd::app {

namespace {

Error usage(std::string message) { return Error::make(ErrorCode::invalid_argument, std::move(message)); }

// What a row's value is, for "--pids needs a number, not 'x'."
std::string value_wanted(const sandbox::SandboxKey& row) {
  if (row.value_name == "SIZE") return "a size such as 512M";
  if (row.value_name == "SECONDS") return "a number of seconds";
  if (row.value_name == "ID") return "a host id";
  return "a number";
}

// One flag's value, parsed as its row in sandbox/sandbox_keys.h says and stored there.
Result<void> take_value(const sandbox::SandboxKey& row, std::string_view value, SandboxOptions& options) {
  const std::string flag(row.flag);
  const std::string shown(value);
  sandbox::KeyInput input{.text = value};
  switch (row.value) {
    case sandbox::KeyValue::choice:
      if (std::find(row.choices.begin(), row.choices.end(), value) == row.choices.end()) {
        std::string listed;
        for (std::size_t index = 0; index < row.choices.size(); ++index) {
          if (index > 0) listed += index + 1 == row.choices.size() ? " or " : ", ";
          listed += row.choices[index];
        }
        return usage(flag + " must be " + listed + ", not '" + shown + "'.");
      }
      break;
    case sandbox::KeyValue::whole:
    case sandbox::KeyValue::mebibytes: {
      const bool size = row.value == sandbox::KeyValue::mebibytes;
      const auto number = size ? parse_byte_size(value) : parse_count(value);
      if (!number) return usage(flag + " needs " + value_wanted(row) + ", not '" + shown + "'.");
      const std::uint64_t unit = size ? std::uint64_t{1} << 20 : 1;
      if (*number < row.minimum * unit || *number > row.maximum * unit) {
        return usage(flag + " must be " + sandbox::key_bounds(row) + (size ? " MiB" : "") + ", not '" + shown + "'.");
      }
      input.whole = *number;
      break;
    }
    case sandbox::KeyValue::cpus: {
      char* end = nullptr;
      input.number = std::strtod(shown.c_str(), &end);
      if (shown.empty() || end != shown.c_str() + shown.size() ||
          !(input.number >= sandbox::limit_bounds::kMinimumCpus) ||
          input.number > sandbox::limit_bounds::kMaximumCpus) {
        return usage(flag + " needs a number of CPUs from " + sandbox::key_bounds(row) + ", not '" + shown + "'.");
      }
      break;
    }
    case sandbox::KeyValue::paths:
      // Hidden paths go to the desk's confinement, not to its settings.
      if (row.store == nullptr) {
        options.hidden_paths.emplace_back(std::filesystem::absolute(shown));
        return success();
      }
      {
        const std::string absolute = std::filesystem::absolute(shown).native();
        input.text = absolute;
        return row.store(options.settings, input);
      }
    default: break;
  }
  if (auto stored = row.store(options.settings, input); !stored.ok())
    return usage(flag + ": " + stored.error().what + ".");
  return success();
}

}  // namespace

std::string sandbox_options_help() { return sandbox::sandbox_flags_help(); }

Result<bool> take_sandbox_option(std::span<const std::string_view> arguments, std::size_t& index,
                                 SandboxOptions& options) {
  const std::string_view argument = arguments[index];
  const sandbox::SandboxKey* row = sandbox::find_sandbox_flag(argument);
  if (argument != "--desk" && (row == nullptr || (row->store == nullptr && row->value != sandbox::KeyValue::paths))) {
    return false;
  }
  if (row != nullptr && row->value == sandbox::KeyValue::flag) {
    DESKD_RETURN_IF_ERROR(row->store(options.settings, {}));
    return true;
  }
  if (index + 1 >= arguments.size()) return usage(std::string(argument) + " needs a value.");
  const std::string_view value = arguments[++index];
  if (row == nullptr) {
    options.desk_directory = std::filesystem::path(std::string(value));
    return true;
  }
  DESKD_RETURN_IF_ERROR(take_value(*row, value, options));
  return true;
}

Result<void> check_sandbox_options(const SandboxOptions& options) {
  const sandbox::NetworkMode network = options.settings.network;
  if (!options.settings.allowed_hosts.empty() && network != sandbox::NetworkMode::allowlist) {
    const std::string named = network == sandbox::NetworkMode::host ? "--net host" : "no network (--net none)";
    return usage("--allow limits a sandbox only under --net allowlist, and this one has " + named +
                 ", so the list would be ignored; add --net allowlist to limit it to these hosts, or leave out --allow.");
  }
  if (!(options.settings.egress == sandbox::EgressLimits{}) && network != sandbox::NetworkMode::allowlist) {
    return usage(
        "--egress-connections, --egress-size and --egress-idle limit only the allowlist network's proxy, "
        "and this sandbox has none; add --net allowlist, or leave them out.");
  }
  return success();
}

Result<sandbox::SandboxSpec> build_sandbox_spec(const SandboxOptions& options) {
  DESKD_RETURN_IF_ERROR(check_sandbox_options(options));
  std::error_code error;
  const auto folder = options.desk_directory ? *options.desk_directory : std::filesystem::current_path(error);
  sandbox::SandboxSettings settings = options.settings;
  DESKD_RETURN_IF_ERROR(sandbox::settle_ad_hoc_ids(folder, settings));
  if (options.desk_directory) return sandbox::build_desk_sandbox_spec(folder, options.hidden_paths, settings);
  DESKD_ASSIGN_OR_RETURN(auto confinement, policy::Confinement::create(folder, options.hidden_paths));
  return sandbox::build_sandbox_spec(confinement, settings);
}

}  // namespace deskd::app
