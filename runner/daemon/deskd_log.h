#pragma once
// DeskdLog: the log of `deskd serve`. Under systemd, when stderr is journald's stream, each
// message is one journal entry sent with sd_journal_sendv: its real priority, the whole
// message however many lines, SYSLOG_IDENTIFIER=deskd, and DESK=/TRIGGER= when the caller
// names them. Anywhere else, plain lines on stderr as before.
//
// A logger of deskd's own rather than a spdlog sink: spdlog's messages carry no fields of
// the caller's (its systemd_sink sends only the text, priority and identifier), so a desk's
// name could reach the journal only by parsing it back out of the text.

#include <memory>
#include <string_view>

#include "runner/daemon/journal_entry.h"

namespace spdlog {
class logger;
}

namespace deskd::app {

class DeskdLog {
 public:
  /// A log that writes messages of `threshold` and above: to the journal when fd 2 is the
  /// stream $JOURNAL_STREAM names, else to stderr (timestamped unless $INVOCATION_ID says
  /// systemd runs deskd and stamps the lines itself).
  static std::shared_ptr<DeskdLog> open(LogLevel threshold);

  /// Makes `log` the one installed() returns (deskd serve installs its log once), for code
  /// that has no log handed to it, such as the callbacks of a desk's assembly.
  static void install(std::shared_ptr<DeskdLog> log);
  /// The installed log, or null when none is (another command, a test).
  static std::shared_ptr<DeskdLog> installed();

  /// Whether messages go to the journal as entries with fields.
  bool to_journal() const { return to_journal_; }
  bool enabled(LogLevel level) const { return level >= threshold_; }

  /// Logs `message` at `level` about what `fields` name. Thread-safe. When the journal
  /// refuses the entry, the message goes to stderr instead, so it is never lost.
  void write(LogLevel level, std::string_view message, const LogFields& fields = {}) const;
  void error(std::string_view message, const LogFields& fields = {}) const { write(LogLevel::error, message, fields); }
  void warn(std::string_view message, const LogFields& fields = {}) const { write(LogLevel::warn, message, fields); }
  void info(std::string_view message, const LogFields& fields = {}) const { write(LogLevel::info, message, fields); }
  void debug(std::string_view message, const LogFields& fields = {}) const { write(LogLevel::debug, message, fields); }

  DeskdLog(LogLevel threshold, bool to_journal, std::shared_ptr<spdlog::logger> lines);

 private:
  LogLevel threshold_;
  bool to_journal_;
  std::shared_ptr<spdlog::logger> lines_;  ///< stderr: the log, or the journal's fallback
};

}  // namespace deskd::app
