#!/usr/bin/env bash
# Runs scripts/demo on the binaries of this build and checks that a newcomer would see
# what the README promises: real work in the sandbox, the secret refused, /status beside
# a running turn, a proposal accepted, a clean stop.
set -uo pipefail
build="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
output="$(DESKD_BUILD_DIR="$build" timeout 300 "$root/scripts/demo" 2>&1)"
status=$?
failed=0
expect() {
  if ! grep -qF -- "$1" <<<"$output"; then
    echo "demo_test: the demo's output lacks: $1" >&2
    failed=1
  fi
}
expect "deskd.toml: ok, 2 desk(s)"
expect "../secrets/broker.env holds secrets and cannot be read."
expect "cat: ../secrets/broker.env: No such file or directory"
expect "Started background job"
expect '{"NIFTY 24200 CE": 112.5, "NIFTY 24100 PE": 98.0}'
expect "Desk nifty: running a turn"
expect "Wrote 185 bytes to notes/today.md."
expect "accepted: "
expect "- No new positions in the last 15 minutes of the session"
expect "deskctl ask exited with 0"
expect "The plan allows 2 lots."
expect "Pivot 51200, support 50688."
expect "turn finished: Both helpers answered"
expect "deskd serve exited with status 0"
expect "plan.md: Permission denied"
expect "unshare failed: Operation not permitted"
expect "demo: done"
# A newcomer reads it all: at most 120 lines, of which setup and the two build steps take 3.
lines=$(wc -l <<<"$output")
if [ "$lines" -gt 117 ]; then
  echo "demo_test: the demo printed $lines lines after its build; at most 117 fit the 120 of issue 28" >&2
  failed=1
fi
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ]; then
  echo "$output"
  echo "demo_test: the demo exited with $status" >&2
  exit 1
fi
echo "demo_test: ok"
