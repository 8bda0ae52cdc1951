#include "runner/tools/json_text.h"

#include "base/utf8_text.h"
#include "runner/tools/output_collector.h"

namespace deskd::tools {

std::string valid_utf8(std::string text) {
  if (is_valid_utf8(text)) return text;
  // The collector decodes exactly as bash output is decoded; a text never has more
  // characters than bytes, so with this bound nothing is left out.
  OutputCollector collector(text.size() + 1);
  collector.append(text);
  collector.finish();
  return collector.text();
}

}  // namespace deskd::tools
