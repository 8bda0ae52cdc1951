#include "runner/daemon/deskd_log.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

// The entry's source location would name this file for every message: left out.
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace deskd::app {

namespace {

spdlog::level::level_enum spdlog_level(LogLevel level) {
  switch (level) {
    case LogLevel::trace: return spdlog::level::trace;
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
  }
  return spdlog::level::err;
}

bool stderr_is_journal_stream() {
  struct stat stream {};
  if (::fstat(STDERR_FILENO, &stream) != 0) return false;
  return is_journal_stream(std::getenv("JOURNAL_STREAM"), stream);
}

std::mutex installed_mutex;
std::shared_ptr<DeskdLog> installed_log;

}  // namespace

DeskdLog::DeskdLog(LogLevel threshold, bool to_journal, std::shared_ptr<spdlog::logger> lines)
    : threshold_(threshold), to_journal_(to_journal), lines_(std::move(lines)) {}

std::shared_ptr<DeskdLog> DeskdLog::open(LogLevel threshold) {
  auto lines = std::make_shared<spdlog::logger>("deskd", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  // Under systemd, journald stamps every line itself.
  const bool under_systemd = std::getenv("JOURNAL_STREAM") != nullptr || std::getenv("INVOCATION_ID") != nullptr;
  lines->set_pattern(under_systemd ? "%l: %v" : "%Y-%m-%d %H:%M:%S.%e %l: %v");
  lines->set_level(spdlog_level(threshold));
  lines->flush_on(spdlog::level::trace);
  return std::make_shared<DeskdLog>(threshold, stderr_is_journal_stream(), std::move(lines));
}

void DeskdLog::install(std::shared_ptr<DeskdLog> log) {
  const std::lock_guard lock(installed_mutex);
  installed_log = std::move(log);
}

std::shared_ptr<DeskdLog> DeskdLog::installed() {
  const std::lock_guard lock(installed_mutex);
  return installed_log;
}

void DeskdLog::write(LogLevel level, std::string_view message, const LogFields& fields) const {
  if (!enabled(level)) return;
  if (to_journal_) {
    const std::vector<std::string> entry = journal_fields(level, message, fields);
    std::vector<iovec> parts;
    parts.reserve(entry.size());
    for (const auto& field : entry) parts.push_back(iovec{const_cast<char*>(field.data()), field.size()});
    if (sd_journal_sendv(parts.data(), static_cast<int>(parts.size())) >= 0) return;
  }
  lines_->log(spdlog_level(level), message);
}

}  // namespace deskd::app
