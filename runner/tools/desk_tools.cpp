#include "runner/tools/desk_tools.h"

#include "policy/path_policy.h"
#include "runner/tools/bash_session.h"
#include "runner/tools/bash_tools.h"
#include "runner/tools/file_tools.h"
#include "sandbox/file_opener.h"

namespace deskd::tools {

ToolRegistry make_desk_tools(boost::asio::any_io_executor executor, DeskToolSettings settings) {
  ToolRegistry registry;
  // The file tools check the very confinement the sandbox mounts for bash.
  policy::PathPolicy policy(settings.sandbox.confinement);
  // ... and open files inside a sandbox of the desk's own, with its uid, view and rules.
  auto opener = std::make_shared<sandbox::FileOpener>(settings.sandbox);
  auto session = std::make_shared<BashSession>(std::move(executor), std::move(settings.sandbox),
                                               settings.timeout_seconds, settings.maximum_output_characters);
  add_bash_tools(registry, std::move(session));
  add_file_tools(registry, std::move(policy), std::move(settings.proposals), std::move(settings.desk_name),
                 std::move(opener));
  return registry;
}

}  // namespace deskd::tools
