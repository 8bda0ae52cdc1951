#pragma once
// The desk's file tools: read_file, write_file, edit_file, list_directory and
// propose_file_change. Every path goes through the desk's PathPolicy (the same confinement
// the sandbox mounts for bash) and is then opened through SafeFile, so a link swapped in
// after the check is refused; refusals reach the model as the policy's own sentences.

#include <boost/json/fwd.hpp>

#include <memory>
#include <string>
#include <string_view>

#include "policy/file_system_calls.h"
#include "policy/path_policy.h"
#include "runner/tools/proposal_store.h"
#include "runner/tools/tool.h"
#include "sandbox/refusal_report.h"

namespace boost::asio {
class thread_pool;
}  // namespace boost::asio

namespace deskd::tools {

class ToolRegistry;

/// What the file tools of one desk share.
struct FileToolContext {
  FileToolContext(policy::PathPolicy policy, std::shared_ptr<ProposalStore> proposals,
                  std::string desk_name, std::shared_ptr<const policy::FileSystemCalls> calls = nullptr);
  ~FileToolContext();
  FileToolContext(const FileToolContext&) = delete;
  FileToolContext& operator=(const FileToolContext&) = delete;

  policy::PathPolicy policy;
  std::shared_ptr<ProposalStore> proposals;  ///< Null: propose_file_change refuses.
  std::string desk_name;
  /// Who makes the path-based system calls: for a desk, its FileOpener inside its sandbox,
  /// so the tools can open exactly what its bash can.
  std::shared_ptr<const policy::FileSystemCalls> calls;
  /// One thread for blocking file work (large reads, fsync), so it never stalls the event
  /// loop that runs every desk.
  std::unique_ptr<boost::asio::thread_pool> worker;
  /// Where the path policy's refusals are told (REFUSED, enforcer "path_policy"); null: nowhere.
  std::shared_ptr<sandbox::RefusalReporter> refusals;

  /// The result for `error` from the policy's check of `requested` for `access` ("read",
  /// "write"): its sentence, and when the policy refused, the refusal told to `refusals`
  /// and named on a last line as bash's are.
  ToolResult policy_failure(const Error& error, std::string_view requested, std::string_view access) const;
};

/// Base of the file tools: call() reads nothing itself, runs run() on the context's worker
/// and turns anything thrown into an error result, so no input can throw out of call().
class FileTool : public Tool {
 public:
  explicit FileTool(std::shared_ptr<const FileToolContext> context) : context_(std::move(context)) {}
  boost::asio::awaitable<ToolResult> call(const boost::json::object& input) final;

 protected:
  /// Does the work, on the worker thread. May throw (Boost.JSON, allocation).
  virtual ToolResult run(const boost::json::object& input) const = 0;
  const FileToolContext& context() const { return *context_; }

 private:
  ToolResult run_guarded(const boost::json::object& input) const;
  std::shared_ptr<const FileToolContext> context_;
};

/// read_file {path, offset?, limit?}: the file's lines numbered like `cat -n`, at most
/// kDefaultWindowLines lines (or `limit`) and kWindowBytes bytes at a time, with a final
/// note naming the lines shown and the offset to ask for next. Refuses binary files: a NUL
/// byte in the first kBinaryProbeBytes, or bytes that are not UTF-8.
class ReadFileTool final : public FileTool {
 public:
  static constexpr std::size_t kDefaultWindowLines = 2000;
  static constexpr std::size_t kWindowBytes = 256 * 1024;
  static constexpr std::size_t kBinaryProbeBytes = 8 * 1024;
  using FileTool::FileTool;
  std::string_view name() const override { return "read_file"; }
  std::string_view title() const override { return "Read a file"; }
  ToolEffects effects() const override { return ToolEffects{.read_only = true, .destructive = false, .idempotent = true, .open_world = false}; }
  ToolReach reach() const override { return ToolReach::reads; }
  std::string_view description() const override;
  std::string_view input_schema() const override;

 protected:
  ToolResult run(const boost::json::object& input) const override;
};

/// write_file {path, content}: replaces a file in the desk's writable places; Memory.md is
/// rewritten in place (the sandbox binds that inode), everything else atomically.
class WriteFileTool final : public FileTool {
 public:
  using FileTool::FileTool;
  std::string_view name() const override { return "write_file"; }
  std::string_view title() const override { return "Write a file"; }
  ToolEffects effects() const override { return ToolEffects{.read_only = false, .destructive = true, .idempotent = true, .open_world = false}; }
  ToolReach reach() const override { return ToolReach::writes; }
  std::string_view description() const override;
  std::string_view input_schema() const override;

 protected:
  ToolResult run(const boost::json::object& input) const override;
};

/// edit_file {path, old_text, new_text, replace_all?}: exact text replacement in a file the
/// desk may write. Refuses old_text that is missing, or that appears more than once
/// without replace_all.
class EditFileTool final : public FileTool {
 public:
  /// Files larger than this are edited with bash instead.
  static constexpr std::size_t kMaximumFileBytes = 16 * 1024 * 1024;
  using FileTool::FileTool;
  std::string_view name() const override { return "edit_file"; }
  std::string_view title() const override { return "Edit a file"; }
  ToolEffects effects() const override { return ToolEffects{.read_only = false, .destructive = true, .idempotent = false, .open_world = false}; }
  ToolReach reach() const override { return ToolReach::writes; }
  std::string_view description() const override;
  std::string_view input_schema() const override;

 protected:
  ToolResult run(const boost::json::object& input) const override;
};

/// list_directory {path?}: a folder's entries, one a line, sorted by name; folders end with
/// "/", links show their target. Hidden paths are listed by name but never entered.
class ListDirectoryTool final : public FileTool {
 public:
  static constexpr std::size_t kMaximumEntries = 1000;
  using FileTool::FileTool;
  std::string_view name() const override { return "list_directory"; }
  std::string_view title() const override { return "List a folder"; }
  ToolEffects effects() const override { return ToolEffects{.read_only = true, .destructive = false, .idempotent = true, .open_world = false}; }
  ToolReach reach() const override { return ToolReach::reads; }
  std::string_view description() const override;
  std::string_view input_schema() const override;

 protected:
  ToolResult run(const boost::json::object& input) const override;
};

/// propose_file_change {path, content, reason}: stores a proposal for the user. Refuses
/// hidden paths (the policy's read message) and paths the desk may write itself.
class ProposeFileChangeTool final : public FileTool {
 public:
  using FileTool::FileTool;
  std::string_view name() const override { return "propose_file_change"; }
  std::string_view title() const override { return "Propose a file change"; }
  ToolEffects effects() const override { return ToolEffects{.read_only = false, .destructive = false, .idempotent = false, .open_world = false}; }
  ToolReach reach() const override { return ToolReach::proposes; }
  std::string_view description() const override;
  std::string_view input_schema() const override;

 protected:
  ToolResult run(const boost::json::object& input) const override;
};

/// Adds the five file tools of one desk to `registry`. `proposals` holds the desk's
/// proposals (null: propose_file_change refuses); `desk_name` is recorded in each. `calls`
/// makes their system calls: a desk's own FileOpener; null means deskd's own rights, which
/// only tests of the tools' logic use.
void add_file_tools(ToolRegistry& registry, policy::PathPolicy policy, std::shared_ptr<ProposalStore> proposals,
                    std::string desk_name, std::shared_ptr<const policy::FileSystemCalls> calls = nullptr,
                    std::shared_ptr<sandbox::RefusalReporter> refusals = nullptr);

}  // namespace deskd::tools
