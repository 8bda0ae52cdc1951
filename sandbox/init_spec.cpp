#include "sandbox/init_spec.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "sandbox/egress_relay.h"

namespace deskd::sandbox {

std::vector<std::string> executable_candidates(const std::string& name, const std::vector<std::string>& environment) {
  if (name.find('/') != std::string::npos) return {name};
  std::string search_path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& entry : environment) {
    if (entry.rfind("PATH=", 0) == 0) search_path = entry.substr(5);
  }
  std::vector<std::string> candidates;
  std::size_t start = 0;
  while (start <= search_path.size()) {
    const std::size_t colon = std::min(search_path.find(':', start), search_path.size());
    const std::string folder = search_path.substr(start, colon - start);
    candidates.push_back((folder.empty() ? std::string(".") : folder) + "/" + name);
    start = colon + 1;
  }
  return candidates;
}

// What deskd-init is to do, in a memfd of its own (argv and the environment can be larger
// than a pipe holds): the header, then every string with its NUL.
Result<UniqueFd> write_init_spec(std::uint32_t mode, const std::vector<std::string>& candidates,
                                 const std::vector<std::string>& arguments, const std::vector<std::string>& environment,
                                 int egress_relay_index, const std::vector<deskd_egress_listener>& listeners) {
  std::string strings;
  for (const auto* list : {&candidates, &arguments, &environment}) {
    for (const auto& text : *list) {
      if (text.find('\0') != std::string::npos) {
        return Error::make(ErrorCode::invalid_argument, "An argument or variable for the sandbox holds a NUL byte.");
      }
      strings.append(text).push_back('\0');
    }
  }
  if (strings.size() > DESKD_INIT_MAX_SPEC_BYTES) {
    return Error::make(ErrorCode::invalid_argument, "The command's arguments and environment exceed 4 MiB.");
  }
  if (listeners.size() > DESKD_EGRESS_MAX_LISTENERS) {
    return Error::make(ErrorCode::invalid_argument, "The desk's allowed names need too many listeners.");
  }
  deskd_init_header header{DESKD_INIT_MAGIC,
                           mode,
                           static_cast<std::uint32_t>(candidates.size()),
                           static_cast<std::uint32_t>(arguments.size()),
                           static_cast<std::uint32_t>(environment.size()),
                           static_cast<std::uint32_t>(strings.size()),
                           egress_relay_index,
                           egress_relay_index >= 0 ? kEgressProxyPort : 0U,
                           static_cast<std::uint32_t>(listeners.size())};
  UniqueFd spec(::memfd_create("deskd-init-spec", MFD_CLOEXEC));
  if (!spec) return Error::from_errno(errno, "Creating the memfd for deskd-init's spec failed");
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof header);
  bytes += strings;
  bytes.append(reinterpret_cast<const char*>(listeners.data()), listeners.size() * sizeof(deskd_egress_listener));
  std::string_view rest = bytes;
  while (!rest.empty()) {
    const ssize_t written = retry_on_eintr([&] { return ::write(spec.get(), rest.data(), rest.size()); });
    if (written <= 0) return Error::from_errno(errno, "Writing deskd-init's spec failed");
    rest.remove_prefix(static_cast<std::size_t>(written));
  }
  return spec;
}

}  // namespace deskd::sandbox
