#include "runner/daemon/journal_entry.h"

#include <syslog.h>

#include <charconv>
#include <cstdint>
#include <cstring>

namespace deskd::app {

namespace {

// A whole decimal number, nothing before or after it.
std::optional<std::uint64_t> decimal(std::string_view text) {
  std::uint64_t value = 0;
  if (text.empty()) return std::nullopt;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<LogLevel> log_level_named(std::string_view name) {
  if (name == "trace") return LogLevel::trace;
  if (name == "debug") return LogLevel::debug;
  if (name == "info") return LogLevel::info;
  if (name == "warn") return LogLevel::warn;
  if (name == "error") return LogLevel::error;
  return std::nullopt;
}

int journal_priority(LogLevel level) {
  switch (level) {
    case LogLevel::error: return LOG_ERR;
    case LogLevel::warn: return LOG_WARNING;
    case LogLevel::info: return LOG_INFO;
    case LogLevel::debug:
    case LogLevel::trace: return LOG_DEBUG;
  }
  return LOG_ERR;  // an enum value out of range: rather seen than lost
}

std::vector<std::string> journal_fields(LogLevel level, std::string_view message, const LogFields& fields) {
  std::vector<std::string> entry;
  entry.reserve(5);
  entry.push_back("MESSAGE=" + std::string(message));
  entry.push_back("PRIORITY=" + std::to_string(journal_priority(level)));
  entry.emplace_back("SYSLOG_IDENTIFIER=deskd");
  if (!fields.desk.empty()) entry.push_back("DESK=" + fields.desk);
  if (!fields.trigger.empty()) entry.push_back("TRIGGER=" + fields.trigger);
  return entry;
}

bool is_journal_stream(const char* journal_stream, const struct stat& stream) {
  if (journal_stream == nullptr) return false;
  const std::string_view value(journal_stream, std::strlen(journal_stream));
  const std::size_t colon = value.find(':');
  if (colon == std::string_view::npos) return false;
  const auto device = decimal(value.substr(0, colon));
  const auto inode = decimal(value.substr(colon + 1));
  return device && inode && *device == static_cast<std::uint64_t>(stream.st_dev) &&
         *inode == static_cast<std::uint64_t>(stream.st_ino);
}

}  // namespace deskd::app
