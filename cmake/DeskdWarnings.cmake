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
  # _FORTIFY_SOURCE needs optimisation; a debug build or test code (below) would only warn
  # about it.
  $<$<AND:$<NOT:$<CONFIG:Debug>>,$<NOT:$<BOOL:$<TARGET_PROPERTY:DESKD_TEST_CODE>>>>:-D_FORTIFY_SOURCE=2>)

# Test code (a target whose DESKD_TEST_CODE property is on: tests/ sets it on every suite) is
# compiled without optimisation, while the code under test, in the libraries and the deskd
# binary, keeps the preset's level. Optimising the suites was 60 % of a build's compile time
# (most of it GCC's optimisers on GoogleTest, Asio and Beast templates), for code that runs
# once per test.
target_compile_options(deskd_build_flags INTERFACE $<$<BOOL:$<TARGET_PROPERTY:DESKD_TEST_CODE>>:-O0>)

target_link_options(deskd_build_flags INTERFACE
  -pie -Wl,-z,relro,-z,now,-z,noexecstack)

# GCC 12 reports Asio's awaitable frames, allocated and freed by the frame's own operator
# new and delete, as mismatched when it inlines more (-O1 under ASan, unity builds): a false
# positive. ASan still catches a real mismatch at run time (alloc-dealloc-mismatch).
target_compile_options(deskd_build_flags INTERFACE $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>)

if(CMAKE_UNITY_BUILD)
  # A unity build includes each .cpp into a bigger one, and GCC then takes a coroutine frame
  # that holds an anonymous-namespace type for a header's (-Wsubobject-linkage): harmless
  # here, since the unity file is its own translation unit.
  target_compile_options(deskd_build_flags INTERFACE $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
endif()

if(DESKD_SANITIZE)
  # GCC 12's flow analysis sees the sanitizers' inserted checks and reports false positives
  # at -O1 (an std::optional<Result<...>> "maybe uninitialized"); the dev build keeps the
  # warning as an error.
  target_compile_options(deskd_build_flags INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
    $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
  target_link_options(deskd_build_flags INTERFACE -fsanitize=address,undefined)
endif()

if(DESKD_BUILD_FUZZERS)
  # Instrument every library, not only the fuzz target, so coverage guides the fuzzer
  # through the code under test.
  target_compile_options(deskd_build_flags INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  target_link_options(deskd_build_flags INTERFACE -fsanitize=address,undefined)
endif()
