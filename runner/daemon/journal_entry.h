#pragma once
// What one log message of deskd becomes in the systemd journal: its priority, its fields,
// and whether deskd's stderr is journald's stream at all. Pure, so that the mapping is
// tested without a journald (deskd_log.cpp sends what these build).

#include <sys/stat.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace deskd::app {

/// The levels of [runner] log_level, least severe first.
enum class LogLevel { trace, debug, info, warn, error };

/// What a message is about, as journal fields: DESK= the desk's name, TRIGGER= the trigger's
/// id. Empty means not known; such a field is left out.
struct LogFields {
  std::string desk;
  std::string trigger;
};

/// The fields of a message about desk `desk` and no trigger in particular.
inline LogFields about_desk(std::string desk) { return LogFields{std::move(desk), {}}; }

/// The level [runner] log_level names ("trace", "debug", "info", "warn", "error"); nothing
/// for any other word.
std::optional<LogLevel> log_level_named(std::string_view name);

/// The syslog priority journald files a message of `level` under: error → LOG_ERR (3),
/// warn → LOG_WARNING (4), info → LOG_INFO (6), debug and trace → LOG_DEBUG (7).
int journal_priority(LogLevel level);

/// The fields of one journal entry, each "NAME=value": MESSAGE (the whole message, however
/// many lines), PRIORITY, SYSLOG_IDENTIFIER=deskd, then DESK and TRIGGER when known.
std::vector<std::string> journal_fields(LogLevel level, std::string_view message, const LogFields& fields);

/// True when `journal_stream` ($JOURNAL_STREAM: "DEVICE:INODE", both decimal) names the
/// stream `stream` is the fstat of — that is, systemd connected that descriptor to journald
/// (sd_journal_stream_fd(3), systemd.exec(5)). False for a null, malformed or other value:
/// a stderr redirected by hand keeps plain lines though the variable was inherited.
bool is_journal_stream(const char* journal_stream, const struct stat& stream);

}  // namespace deskd::app
