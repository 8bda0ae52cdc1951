#include "security/mcp_session.h"

#include <boost/json.hpp>

#include <cstdint>
#include <sstream>
#include <unistd.h>

namespace deskd::security_testing {

namespace json = boost::json;

std::string json_string(const std::string& text) { return json::serialize(json::value(text)); }

std::vector<ToolAnswer> call_tools(Daemon daemon, const TestDesk& desk, const std::vector<ToolCall>& calls,
                                   SandboxRun* run, const std::vector<std::string>& extra_arguments) {
  // Request ids are 1000 + the call's index; the server may answer them in any order.
  constexpr int kFirstId = 1000;
  std::string requests =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
      R"("capabilities":{},"clientInfo":{"name":"security_tests","version":"1"}}})" "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})" "\n";
  for (size_t index = 0; index < calls.size(); ++index) {
    requests += R"({"jsonrpc":"2.0","id":)" + std::to_string(kFirstId + index) +
                R"(,"method":"tools/call","params":{"name":)" + json_string(calls[index].tool) +
                R"(,"arguments":)" + calls[index].arguments_json + "}}\n";
  }
  // Beside the desk, not in it: the file is the test's, and deskd opens it before any uid change.
  const std::string input = desk.root() + "/" + unique_name("mcp-requests") + ".jsonl";
  write_host_file(input, requests, 0600);

  std::vector<std::string> arguments = {"mcp"};
  for (const auto& each : desk.sandbox_arguments()) arguments.push_back(each);
  arguments.insert(arguments.end(), extra_arguments.begin(), extra_arguments.end());
  LaunchOptions options;
  options.standard_input = input;
  options.timeout = std::chrono::milliseconds(30000);
  SandboxRun finished = run_deskd(daemon, arguments, options);
  ::unlink(input.c_str());

  std::vector<ToolAnswer> answers(calls.size());
  std::istringstream lines(finished.out);
  for (std::string line; std::getline(lines, line);) {
    boost::system::error_code error;
    const json::value reply = json::parse(line, error);
    if (error || !reply.is_object()) continue;
    const json::value* id = reply.as_object().if_contains("id");
    const json::value* result = reply.as_object().if_contains("result");
    if (id == nullptr || !id->is_int64() || result == nullptr || !result->is_object()) continue;
    const auto index = id->as_int64() - kFirstId;
    if (index < 0 || index >= static_cast<std::int64_t>(answers.size())) continue;
    ToolAnswer& answer = answers[static_cast<size_t>(index)];
    answer.answered = true;
    const json::value* is_error = result->as_object().if_contains("isError");
    answer.is_error = is_error == nullptr || !is_error->is_bool() || is_error->as_bool();
    const json::value* content = result->as_object().if_contains("content");
    if (content != nullptr && content->is_array()) {
      for (const auto& piece : content->as_array()) {
        const json::value* text = piece.is_object() ? piece.as_object().if_contains("text") : nullptr;
        if (text != nullptr && text->is_string()) answer.text += std::string(text->as_string());
      }
    }
  }
  if (run != nullptr) *run = std::move(finished);
  return answers;
}

}  // namespace deskd::security_testing
