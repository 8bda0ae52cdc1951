# Warnings and hardening applied to every deskd target through one interface library,
# so that no target can forget them.
add_library(deskd_build_flags INTERFACE)
add_library(deskd::build_flags ALIAS deskd_build_flags)

target_compile_options(deskd_build_flags INTERFACE
  -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wformat-security
  # GCC 12 at -O3 reports -Wrestrict inside libstdc++ for "literal" + std::string&&
  # (GCC bug 105329), a false positive that would fail the release build.
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>
  -fstack-protector-strong -fstack-clash-protection -fcf-protection
  # _FORTIFY_SOURCE needs optimisation; a debug build would only warn about it.
  $<$<NOT:$<CONFIG:Debug>>:-D_FORTIFY_SOURCE=2>)

target_link_options(deskd_build_flags INTERFACE
  -pie -Wl,-z,relro,-z,now,-z,noexecstack)

if(DESKD_SANITIZE)
  target_compile_options(deskd_build_flags INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(deskd_build_flags INTERFACE -fsanitize=address,undefined)
endif()

if(DESKD_BUILD_FUZZERS)
  # Instrument every library, not only the fuzz target, so coverage guides the fuzzer
  # through the code under test.
  target_compile_options(deskd_build_flags INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  target_link_options(deskd_build_flags INTERFACE -fsanitize=address,undefined)
endif()
