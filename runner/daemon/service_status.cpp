#include "runner/daemon/service_status.h"

namespace deskd::app {
namespace {

constexpr std::size_t kNamedDesks = 3;
constexpr std::size_t kReasonCharacters = 80;

// One line of at most kReasonCharacters bytes, cut at a whole UTF-8 character and a word.
std::string short_reason(const std::string& reason) {
  std::string line;
  for (const char c : reason) {
    const auto byte = static_cast<unsigned char>(c);
    const char shown = byte < 0x20 || byte == 0x7f ? ' ' : c;
    if (shown == ' ' && (line.empty() || line.back() == ' ')) continue;  // runs of spaces, as one
    line += shown;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  if (line.empty()) return "no reason given";
  if (line.size() <= kReasonCharacters) return line;
  std::size_t cut = kReasonCharacters;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;  // inside a character
  if (const std::size_t space = line.rfind(' ', cut); space != std::string::npos && space > kReasonCharacters / 2) {
    cut = space;
  }
  line.resize(cut);
  while (!line.empty() && (line.back() == ' ' || line.back() == ',' || line.back() == ';' || line.back() == ':')) {
    line.pop_back();
  }
  return line + "...";
}

}  // namespace

std::string service_status_line(std::size_t running, std::size_t total, std::size_t starting,
                                std::span<const StoppedDesk> stopped) {
  const std::string of = std::to_string(running) + " of " + std::to_string(total) + " desks running";
  if (starting > 0) return "starting: " + of + ", " + std::to_string(starting) + " starting";
  if (stopped.empty()) return of;
  // STATUS= is one line for `systemctl status`; deskctl desks has every desk and whole reasons.
  std::string line = of + "; kept stopped: ";
  for (std::size_t index = 0; index < stopped.size() && index < kNamedDesks; ++index) {
    line += (index > 0 ? "; " : "") + stopped[index].name + ": " + short_reason(stopped[index].reason);
  }
  if (stopped.size() > kNamedDesks) line += "; and " + std::to_string(stopped.size() - kNamedDesks) + " more";
  return line;
}

}  // namespace deskd::app
