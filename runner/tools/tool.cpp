#include "runner/tools/tool.h"

namespace deskd::tools {

const std::string_view kBasicOutputSchema = R"({"type":"object","properties":{)"
    R"("text":{"type":"string","description":"What the tool answered, as its text content shows it."},)"
    R"("truncated":{"type":"boolean","description":"Whether output was left out because it was too long."},)"
    R"("is_error":{"type":"boolean","description":"Whether the call failed or was refused; the text says why."}},)"
    R"("required":["text","truncated","is_error"]})";

boost::asio::awaitable<void> Tool::close() { co_return; }

}  // namespace deskd::tools
