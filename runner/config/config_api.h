#pragma once
// The [[api]] tables of the config (docs/API_GATE.md) and the desks that name them. Private
// to the config loader (include only from its .cpp files: it needs toml++).
//
// Every credential's key file joins the daemon's own paths, hidden from every desk whether
// or not it names the API (as [model] api_key_file does). A desk naming an API gets the
// resolved ApiSpec in DeskConfig::apis, and each of its origins' "host:port" in its
// sandbox's allowed_hosts — the one list the egress proxy reads — unless it is there already.

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "policy/api_rules.h"
#include "runner/config/config_reader.h"
#include "runner/config/config_world.h"

namespace deskd::app::config_detail {

/// An [[api]] as read, with where its parts were written.
struct ApiDraft {
  policy::ApiSpec spec;
  ConfigPosition position;  ///< its [[api]] header
  /// Each credential's variable, in order, with where it was written.
  std::vector<std::pair<std::string, ConfigPosition>> variables;
};

/// Reads every [[api]] (`node` is the top-level `api` value); each credential's key file is
/// added to `context.daemon_paths`.
std::vector<ApiDraft> read_apis(const toml::node& node, LoadContext& context);

/// Reads one [[api.rule]] (`number` is its 1-based place, for the default name "rule N").
policy::ApiRule read_api_rule(const toml::table& table, std::size_t number, LoadContext& context);

/// Whether `name` may hold a credential's placeholder: a variable name ([A-Za-z_][A-Za-z0-9_]*)
/// that the sandbox does not set itself (PATH, HOME, the CA bundle variables, *_PROXY, ...).
/// The error is a sentence.
Result<void> check_placeholder_variable(std::string_view name);

/// Reads a [[desk]]'s 'apis' into `draft.api_names`.
void read_desk_apis(TableReader& reader, DeskDraft& draft);

/// Resolves each desk's 'apis' against `apis`: fills DeskConfig::apis and extends its
/// allowed_hosts. Reports an unknown name, a desk without network = "allowlist", two APIs
/// of one desk sharing an origin, one variable in two of its credentials, and a variable
/// the desk also passes in from deskd's environment.
void give_desks_their_apis(std::span<DeskDraft> drafts, std::span<const ApiDraft> apis, ProblemList& problems);

}  // namespace deskd::app::config_detail
