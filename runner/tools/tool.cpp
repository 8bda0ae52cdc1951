#include "runner/tools/tool.h"

namespace deskd::tools {

boost::asio::awaitable<void> Tool::close() { co_return; }

}  // namespace deskd::tools
