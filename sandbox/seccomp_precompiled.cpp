// The seccomp program as compiled at build time by seccomp_bpf_generator (see
// sandbox/CMakeLists.txt), so that launching a sandbox spends no time in libseccomp.

#include "sandbox/seccomp_profile.h"

namespace deskd::sandbox {
namespace {

constexpr sock_filter kPrecompiledInstructions[] = {
#include "seccomp_program.inc"
};

}  // namespace

SeccompProgram SeccompProgram::precompiled() {
  SeccompProgram program;
  program.instructions_.assign(std::begin(kPrecompiledInstructions), std::end(kPrecompiledInstructions));
  program.program_.len = static_cast<unsigned short>(program.instructions_.size());
  program.program_.filter = program.instructions_.data();
  return program;
}

}  // namespace deskd::sandbox
