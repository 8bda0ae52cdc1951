#!/usr/bin/env bash
# The README's first command on a fresh machine (issue 28): boots a clean Debian 12 under
# systemd-nspawn (the install test's root: debootstrap minbase with systemd and apt), copies
# in a clone of this repository's HEAD, runs scripts/demo there as a newcomer would, and
# checks that it ends with "demo: done" within 120 lines, that every package it asked apt
# for is on the demo's list in scripts/setup (dependencies come along, recommendations do
# not), and that no systemd unit was enabled. Prints the demo's time. Run as root.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/booted_debian.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh_demo_test: FAIL: needs root (debootstrap and systemd-nspawn)" >&2
  exit 1
fi
failures=0
step() { printf '== fresh_demo_test: %s\n' "$*"; }
fail() { echo "fresh_demo_test: FAIL: $*" >&2; failures=$((failures + 1)); }

# The compiler's cache is the one thing kept from run to run (DESKD_FRESH_CCACHE; empty for
# none), bound at ccache's default place inside: a clean machine otherwise, without paying a
# cold build of deskd at every run of the suite. The first run is the cold one.
ccache_dir="${DESKD_FRESH_CCACHE-/var/tmp/deskd-fresh-ccache}"
if [ -n "$ccache_dir" ]; then
  mkdir -p "$ccache_dir"
  BOOTED_DEBIAN_NSPAWN_ARGS=("--bind=$ccache_dir:/root/.cache/ccache")
fi

step "booting Debian 12"
name=deskd-fresh-$$
booted_debian_start "$name"
inside() { booted_debian_run "$name" "$@"; }
step "a clone of HEAD into /root/deskd"
git -C "$root" archive --format=tar HEAD | inside sh -c 'mkdir /root/deskd && tar -x -C /root/deskd'

manual_before="$(inside apt-mark showmanual | sort)"
enabled_before="$(inside systemctl list-unit-files --state=enabled --no-legend --no-pager | awk '{print $1}' | sort)"

step "scripts/demo"
started=$SECONDS
status=0
# Each line with the second it came at (pipefail keeps the demo's status).
timed="$(inside sh -c 'cd /root/deskd && scripts/demo' 2>&1 |
  while IFS= read -r line; do printf '%s %s\n' "$((SECONDS - started))" "$line"; done)" || status=$?
seconds=$((SECONDS - started))
output="$(cut -d' ' -f2- <<<"$timed")"
lines=$(wc -l <<<"$output")
echo "$output" | tail -n 5
echo "fresh_demo_test: the demo took ${seconds} s and printed $lines lines; its steps began at:"
grep -E '^[0-9]+ (setup[ :]|demo:|== The config)' <<<"$timed" | sed -E 's/^([0-9]+) /  \1 s  /'
[ "$status" -eq 0 ] || fail "scripts/demo exited with $status"
grep -q '^demo: done$' <<<"$output" || fail "the demo did not end with 'demo: done'"
[ "$lines" -le 120 ] || fail "the demo printed $lines lines (at most 120)"
if grep -qiE '^(Get:|Selecting previously|Unpacking|Setting up|Preparing to unpack|npm )' <<<"$output"; then
  fail "apt's or npm's output reached the demo's"
fi

step "what it installed and enabled"
allowed="$(bash -c '. /dev/stdin; stage_packages build; stage_packages demo' <<<"$(sed -n '/^stage_packages() {/,/^}/p' "$root/scripts/setup")" | tr ' ' '\n' | sort -u)"
added="$(comm -13 <(echo "$manual_before") <(inside apt-mark showmanual | sort))"
outside="$(comm -23 <(echo "$added" | sed '/^$/d') <(echo "$allowed"))"
echo "asked apt for: $(echo $added)"
[ -z "$outside" ] || fail "the demo installed packages outside its list: $(echo $outside)"
enabled_after="$(inside systemctl list-unit-files --state=enabled --no-legend --no-pager | awk '{print $1}' | sort)"
newly_enabled="$(comm -13 <(echo "$enabled_before") <(echo "$enabled_after"))"
[ -z "$newly_enabled" ] || fail "the demo enabled units: $(echo $newly_enabled)"

booted_debian_stop "$name"
if [ "$failures" -ne 0 ]; then
  echo "$output"
  echo "fresh_demo_test: $failures failure(s)" >&2
  exit 1
fi
echo "fresh_demo_test: ok (${seconds} s)"
