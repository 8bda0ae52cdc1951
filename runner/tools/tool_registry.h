#pragma once
// ToolRegistry: a desk's tools, found by name; closing it closes them (the bash session).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "runner/tools/tool.h"

namespace deskd::tools {

class ToolRegistry {
 public:
  /// Adds a tool; a second tool with the same name replaces nothing and is refused (false).
  bool add(std::unique_ptr<Tool> tool);
  /// The tool called `name`, or nullptr.
  Tool* find(std::string_view name) const;
  /// Keeps only the tools named in `names`, in their order; refuses (and keeps every tool)
  /// when a name is not a tool here, naming it and the tools there are.
  Result<void> keep_only(const std::vector<std::string>& names);
  /// Every tool, in the order added.
  const std::vector<std::unique_ptr<Tool>>& tools() const { return tools_; }
  /// Calls the tool `name`; an unknown name gives an error result listing the known ones.
  boost::asio::awaitable<ToolResult> call(std::string_view name, const boost::json::object& input);
  /// Lets every tool start what its first call would wait for (Tool::prepare), in the
  /// background; nothing once closed.
  void prepare();
  /// Closes every tool. Calls after this get an error result.
  boost::asio::awaitable<void> close();
  bool closed() const { return closed_; }

 private:
  std::vector<std::unique_ptr<Tool>> tools_;
  bool closed_ = false;
};

}  // namespace deskd::tools
