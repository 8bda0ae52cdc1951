#include "runner/tools/file_tools.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/object.hpp>

#include <exception>

#include "policy/path_resolution.h"
#include "runner/tools/tool_registry.h"

namespace deskd::tools {

FileToolContext::FileToolContext(policy::PathPolicy path_policy, std::shared_ptr<ProposalStore> proposal_store,
                                 std::string desk, std::shared_ptr<const policy::FileSystemCalls> system_calls)
    // Paths are resolved with the same calls that open them: in the desk's own view.
    : policy(system_calls ? path_policy.resolving_through(system_calls) : std::move(path_policy)),
      proposals(std::move(proposal_store)),
      desk_name(std::move(desk)),
      calls(system_calls ? std::move(system_calls)
                         : std::shared_ptr<const policy::FileSystemCalls>(&policy::own_file_system_calls(),
                                                                           [](const policy::FileSystemCalls*) {})),
      worker(std::make_unique<boost::asio::thread_pool>(1)) {}

// Stops the worker and waits for a job in progress; out of line so the header needs only a
// declaration of thread_pool.
FileToolContext::~FileToolContext() = default;

boost::asio::awaitable<ToolResult> FileTool::call(const boost::json::object& input) {
  ToolResult result;
  try {
    // The job owns a copy of the input: the worker must not depend on the caller's object.
    // It is built in statements of its own, not inside the co_await expression: g++ 12
    // destroys a temporary lambda's captures twice when the full expression suspends.
    auto owned = std::make_shared<const boost::json::object>(input);
    auto job = [this, owned]() -> boost::asio::awaitable<ToolResult> { co_return run_guarded(*owned); };
    auto on_worker = boost::asio::co_spawn(context_->worker->get_executor(), std::move(job), boost::asio::use_awaitable);
    result = co_await std::move(on_worker);
  } catch (const std::exception& error) {
    result = ToolResult::failure(std::string(name()) + " failed unexpectedly: " + error.what());
  } catch (...) {
    result = ToolResult::failure(std::string(name()) + " failed unexpectedly.");
  }
  co_return result;
}

ToolResult FileTool::run_guarded(const boost::json::object& input) const {
  try {
    return run(input);
  } catch (const std::exception& error) {
    return ToolResult::failure(std::string(name()) + " failed unexpectedly: " + error.what());
  } catch (...) {
    return ToolResult::failure(std::string(name()) + " failed unexpectedly.");
  }
}

ToolResult FileToolContext::policy_failure(const Error& error, std::string_view requested,
                                           std::string_view access) const {
  if (error.code != ErrorCode::refused || !refusals) return ToolResult::failure(error.what);
  const bool hidden = error.what.find("holds secrets") != std::string::npos;
  sandbox::Refusal refusal{sandbox::Enforcer::path_policy,
                           std::string(access) + " " + policy::printable_path(requested), "",
                           hidden ? "hidden paths hold secrets and are never shown to a desk"
                                  : "desks may write only memory/, notes/, scratch/ and Memory.md of their folder",
                           std::nullopt};
  const std::uint64_t mark = refusals->mark();
  refusals->record(std::move(refusal));
  return ToolResult::failure(sandbox::with_refusal_lines(error.what, refusals->lines_since(mark)));
}

void add_file_tools(ToolRegistry& registry, policy::PathPolicy policy, std::shared_ptr<ProposalStore> proposals,
                    std::string desk_name, std::shared_ptr<const policy::FileSystemCalls> calls,
                    std::shared_ptr<sandbox::RefusalReporter> refusals) {
  auto made = std::make_shared<FileToolContext>(std::move(policy), std::move(proposals), std::move(desk_name),
                                                std::move(calls));
  made->refusals = std::move(refusals);
  const std::shared_ptr<const FileToolContext> context = std::move(made);
  // add() refuses only a duplicate name; the registry then keeps the tool added first.
  registry.add(std::make_unique<ReadFileTool>(context));
  registry.add(std::make_unique<WriteFileTool>(context));
  registry.add(std::make_unique<EditFileTool>(context));
  registry.add(std::make_unique<ListDirectoryTool>(context));
  registry.add(std::make_unique<ProposeFileChangeTool>(context));
}

}  // namespace deskd::tools
