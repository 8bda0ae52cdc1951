#pragma once
// What deskd-init is to do in one sandbox (init/init_protocol.h): the candidates for the
// command's executable, its argv and environment, and the egress forwarder's listeners,
// written by the launcher before the clone into a memfd the child hands to the init.

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/init/init_protocol.h"

namespace deskd::sandbox {

/// The paths to try for `name`: itself when it holds a '/', otherwise each folder of the
/// PATH in `environment` (or the usual one), in order.
std::vector<std::string> executable_candidates(const std::string& name, const std::vector<std::string>& environment);

/// A close-on-exec memfd holding the header and every string with its NUL, then the
/// listeners. `egress_relay_index` is the relay's descriptor in the sandbox, -1 without one.
/// Refuses a NUL inside a string, more than DESKD_INIT_MAX_SPEC_BYTES of strings and more
/// than DESKD_EGRESS_MAX_LISTENERS listeners.
Result<UniqueFd> write_init_spec(std::uint32_t mode, const std::vector<std::string>& candidates,
                                 const std::vector<std::string>& arguments, const std::vector<std::string>& environment,
                                 int egress_relay_index, const std::vector<deskd_egress_listener>& listeners);

}  // namespace deskd::sandbox
