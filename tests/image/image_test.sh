#!/usr/bin/env bash
# The container image: builds the package and localhost/deskd:<version> (scripts/image),
# then, under rootful Podman and again under rootless Podman: the container starts with
# only the options deskd needs and tells READY=1 through Podman's sd_notify proxy (what a
# Quadlet Notify=true unit waits for); deskctl on the host lists the example desk through
# the shared socket folder and runs a turn in a sandbox inside the container; a scripted
# desk runs tests/image/probes.sh, whose escape attempts must all hold; a stopped (exit 0),
# restarted and then recreated container keeps its journal in the state volume; deskd
# doctor inside says a full sandbox can start; and without each option deskd fails closed,
# naming the refused step. Rootful must work; rootless is reported, not failed, when
# Podman cannot run it on this host for a reason outside deskd. Removes the containers,
# volumes and images it made (the cached base stays). Run as root (scripts/test runs it).
#
# DESKD_IMAGE_TEST_KEEP=1 keeps localhost/deskd:<version> afterwards.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/podman_modes.sh"

[ "$(id -u)" -eq 0 ] || { echo "image_test: FAIL: needs root (debootstrap, rootful podman)" >&2; exit 1; }

failures=0
step() { printf '\n== image_test [%s]: %s\n' "${MODE:-build}" "$*"; }
fail() { echo "image_test: FAIL [${MODE:-build}]: $*" >&2; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
expect_in() {  # expect_in WHAT TEXT NEEDLE
  if [[ "$2" == *"$3"* ]]; then ok "$1"; else fail "$1: no '$3' in:"$'\n'"$2"; fi
}

# What deskd needs to build sandboxes inside a container (images/deskd.container says why
# each one); the profile is the very file the image and the Kubernetes manifest ship.
security_options=(--security-opt 'unmask=/proc/*' --security-opt "seccomp=$root/images/seccomp.json"
                  --security-opt label=disable --security-opt no-new-privileges)
# What this host needs for any container, deskd or not: crun fails on its hybrid cgroups,
# and Podman's default nofile/nproc limits exceed the host's hard limits (runc then fails
# with "error setting rlimit type 7 (or 6): operation not permitted").
host_options=(--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
canary=DESKD_IMAGE_CANARY
work=$(mktemp -d /var/tmp/deskd-image-test.XXXXXX)
chmod 0755 "$work"
containers=() volumes=() listeners=() rootless_image=0

cleanup() {
  local rc=$? entry
  for entry in "${containers[@]}"; do mode_use "${entry%%:*}"; pm rm -f -v -t 0 "${entry#*:}" >/dev/null 2>&1 || true; done
  for entry in "${volumes[@]}"; do mode_use "${entry%%:*}"; pm volume rm -f "${entry#*:}" >/dev/null 2>&1 || true; done
  for entry in "${listeners[@]}"; do kill "$entry" 2>/dev/null || true; done
  # The test user's storage holds only what this test loads: leave nothing there.
  if [ "$rootless_image" = 1 ]; then mode_use rootless; pm rmi -f "$image" >/dev/null 2>&1; pm image prune -f >/dev/null 2>&1 || true; fi
  if [ "${DESKD_IMAGE_TEST_KEEP:-0}" != 1 ] && [ -n "${image:-}" ]; then podman rmi -f "$image" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

test_started=$SECONDS
step "building the package and the image"
package=$("$root/scripts/package" | tail -n 1)
started=$SECONDS
image=$("$root/scripts/image" --package "$package" | tail -n 1)
echo "$image in $((SECONDS - started)) s (base included when it was not cached)"
# The host's deskctl is the package's own, readable by the rootless user too.
dpkg-deb -x "$package" "$work/pkg"
deskctl=$work/pkg/usr/bin/deskctl
labels=$(podman image inspect --format '{{json .Labels}}' "$image")
for label in title version revision source licenses; do
  expect_in "label org.opencontainers.image.$label" "$labels" "\"org.opencontainers.image.$label\":"
done
expect_in "the RUN label has the security options" "$labels" 'unmask=/proc/*'
grep -qx "Image=$image" "$root/images/deskd.container" && ok "images/deskd.container runs $image" ||
  fail "images/deskd.container names $(grep '^Image=' "$root/images/deskd.container"), not $image"
user=$(podman image inspect --format '{{.Config.User}}' "$image")
[ "$user" = 10001:10001 ] && ok "the image runs as deskd (10001:10001, numeric for Kubernetes runAsNonRoot)" || fail "the image's user is '$user', not 10001:10001"

# run_deskd NAME SOCKDIR [OPTION...]: starts the image's deskd serve as container NAME with
# the state and config volumes NAME-state and NAME-config, its socket folder at SOCKDIR
# (on the host) and the given options; notify messages go to SOCKDIR/../notify.log.
run_deskd() {
  local name=$1 sockdir=$2; shift 2
  containers+=("$MODE:$name"); volumes+=("$MODE:$name-config" "$MODE:$name-state")
  as_mode NOTIFY_SOCKET="$(dirname "$sockdir")/notify.sock" podman run -d --name "$name" \
    --sdnotify=container --stop-timeout 30 -e "$canary=only-deskd-has-this" \
    -v "$name-config:/etc/deskd" -v "$name-state:/var/lib/deskd" -v "$sockdir:/run/deskd:U" \
    "$@" "$image" >/dev/null
}

# starts_ready LOG: how many container starts LOG says were READY=1. Podman's proxy sends
# MAINPID= for each start and passes on deskd's READY=1, including the one that ends a
# reload (it drops RELOADING=1): counting every READY=1 would let the next wait pass before
# the container it waits for is up. A start is a MAINPID= and the first READY=1 after it
# (the same message or a later one).
starts_ready() {
  awk '/MAINPID=/ { pending = 1 } /READY=1/ { if (pending) n++; pending = 0 } END { print n + 0 }' \
    "$1" 2>/dev/null || echo 0
}

# wait_ready LOG COUNT: until LOG holds COUNT starts' READY=1 messages (30 s).
wait_ready() {
  local deadline=$((SECONDS + 30)) count
  while count=$(starts_ready "$1"); [ "$count" -lt "$2" ]; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.1
  done
}

# A folder of the mode's user for one container: the socket folder and the notify socket.
container_folder() {
  local dir=$work/$MODE-$1
  mkdir -p "$dir/run"; mode_give "$dir"
  listeners+=("$(notify_listener_start "$dir/notify.sock" "$dir/notify.log")")
  echo "$dir"
}

# A second desk, on a script that runs the probes; hidden_paths gives a probe a mask.
add_probe_desk() {
  local name=$1
  pm exec -i -u 0 "$name" sh -c 'set -e
    d=/var/lib/deskd/desks/probes
    mkdir -p $d; cat > $d/probes.sh; echo only-deskd-may-read-this > $d/secret.txt
    chown -R deskd:deskd $d
    printf "%s\n" "{\"steps\": [{\"text\": \"Trying to get out.\", \"tool_calls\": [{\"name\": \"bash\", \"input\": {\"command\": \"bash probes.sh\"}}]}, {\"text\": \"done\"}]}" > /etc/deskd/probes.jsonl
    printf "\n[[desk]]\nname = \"probes\"\ndirectory = \"%s\"\nhidden_paths = [\"%s/secret.txt\"]\n[desk.model]\nscript = \"/etc/deskd/probes.jsonl\"\n" $d $d >> /etc/deskd/deskd.toml' \
    < "$here/probes.sh"
  pm exec "$name" touch /tmp/deskd-image-marker   # the container's /tmp, not a desk's
}

scenario() {
  local name=deskd-image-test-$MODE-$$ dir sock out journal before lines
  local -a net=()
  step "starting the container"
  dir=$(container_folder main); sock=$dir/run/deskd.sock
  if ! out=$(run_deskd "$name" "$dir/run" "${host_options[@]}" "${security_options[@]}" 2>&1); then
    if [ "$MODE" = rootless ] && [[ $out == *slirp4netns* ]]; then
      # Rootless Podman's own network needs /dev/net/tun; deskd does not (the example and the
      # probes run on the script model, and each desk has a network namespace of its own).
      echo "NOTE: rootless networking (slirp4netns) cannot start here: $out"
      echo "NOTE: going on with --network=none"
      net=(--network=none); pm rm -f "$name" >/dev/null 2>&1 || true
      out=$(run_deskd "$name" "$dir/run" "${host_options[@]}" "${security_options[@]}" "${net[@]}" 2>&1) ||
        { PODMAN_STOPPED="podman run --network=none failed: $out"; return 1; }
    else
      PODMAN_STOPPED="podman run failed: $out"; return 1
    fi
  fi
  wait_ready "$dir/notify.log" 1 && ok "READY=1 through --sdnotify=container ($(tr '\n' ' ' < "$dir/notify.log"))" ||
    { fail "no READY=1 in 30 s"; pm logs "$name" 2>&1 | tail -n 20; return 1; }

  step "deskctl through the shared socket $sock"
  expect_in "deskctl desks lists the example desk" "$(ctl_in_mode "$deskctl" --socket "$sock" desks 2>&1)" example
  out=$(ctl_in_mode "$deskctl" --socket "$sock" ask example "prepare the day" 2>&1) || fail "deskctl ask example failed: $out"
  # pwd's output, a line of its own: in no command the turn prints, only in what bash said.
  if grep -Eq '^ *(/var/lib/deskd/desks/example)$' <<<"$out"; then
    ok "a turn ran in a sandbox (its bash printed the desk's folder)"
  else
    fail "the example desk's bash printed no folder: $out"
  fi
  expect_in "the example desk's turn finished" "$out" "turn finished"

  step "the escape probes, from a desk's bash in the container"
  add_probe_desk "$name"
  out=$(ctl_in_mode "$deskctl" --socket "$sock" reload 2>&1) || fail "deskctl reload failed: $out"
  # --json: deskctl's plain output shortens a long tool result; the event has all of it.
  out=$(ctl_in_mode "$deskctl" --socket "$sock" --json ask probes "Try to get out." 2>&1 |
        python3 -c 'import json, sys
for line in sys.stdin:
    event = json.loads(line)
    if event.get("kind") == "TOOL_FINISHED" and event["data"]["tool"] == "bash":
        print(event["data"]["text"])') || true
  local passes fails
  passes=$(grep -c '^PASS ' <<<"$out" || true)
  fails=$(grep '^FAIL ' <<<"$out" || true)
  grep -E '^(FAIL |probes: )' <<<"$out" || true
  if [ "$passes" -ge 30 ] && [ -z "$fails" ] && [[ $out == *"probes: $passes passed, 0 failed"* ]]; then
    ok "all $passes probes held"
  else
    fail "probes: $passes passed; failed:"$'\n'"${fails:-$out}"
  fi

  step "stop, restart, recreate: the journal stays"
  before=$(vol_cat "$name-state" state/desks/example/journal.jsonl) || fail "no journal in $name-state"
  lines=$(wc -l <<<"$before")
  pm stop -t 30 "$name" >/dev/null
  [ "$(pm inspect --format '{{.State.ExitCode}}' "$name")" = 0 ] && ok "deskd stopped cleanly on SIGTERM (exit 0)" ||
    fail "deskd's exit code on stop: $(pm inspect --format '{{.State.ExitCode}}' "$name"); $(pm logs "$name" 2>&1 | tail -n 5)"
  pm start "$name" >/dev/null
  wait_ready "$dir/notify.log" 2 && ok "READY=1 again after a restart" || fail "no READY=1 after the restart"
  journal=$(vol_cat "$name-state" state/desks/example/journal.jsonl) || true
  [[ $journal == "$before"* ]] && ok "the restarted container kept the journal's $lines lines" ||
    fail "the journal changed across the restart"
  pm rm -f -t 30 "$name" >/dev/null
  run_deskd "$name" "$dir/run" "${host_options[@]}" "${security_options[@]}" "${net[@]}"
  wait_ready "$dir/notify.log" 3 && ok "a new container on the same volumes is ready ($(tr '\n' ' ' < "$dir/notify.log"))" || fail "the new container is not ready"
  expect_in "the config volume kept the probes desk" "$(ctl_in_mode "$deskctl" --socket "$sock" desks 2>&1)" probes
  out=$(ctl_in_mode "$deskctl" --socket "$sock" ask example "prepare the day" 2>&1) || fail "deskctl ask after recreating: $out"
  journal=$(vol_cat "$name-state" state/desks/example/journal.jsonl) || true
  if [[ $journal == "$before"* ]] && [ "$(wc -l <<<"$journal")" -gt "$lines" ]; then
    ok "the journal kept its $lines lines and grew to $(wc -l <<<"$journal")"
  else
    fail "the journal lost lines or did not grow after recreating ($lines before, $(wc -l <<<"$journal") after)"
  fi

  step "deskd doctor inside"
  out=$(pm exec "$name" deskd doctor 2>&1) || true
  sed -n 's/^\[\(ok\|missing\|optional: missing\)\] */  [\1] /p' <<<"$out" | cut -c1-110
  expect_in "deskd doctor: a full sandbox can start" "$out" "A full sandbox can start on this host."
  # unmask=/proc/* leaves /proc/sys writable to the container's root: deskd must not get there.
  out=$(pm exec "$name" sh -c 'echo "uid $(stat -c %u /proc/1)"; grep ^NoNewPrivs /proc/1/status' 2>&1)
  expect_in "deskd (pid 1 of the container) runs as deskd" "$out" "uid $(pm exec "$name" id -u deskd)"
  expect_in "deskd runs with no_new_privs" "$out" "NoNewPrivs:"$'\t'"1"
  out=$(pm exec -u 0 "$name" find / -xdev -perm /6000 -type f 2>&1)
  [ -z "$out" ] && ok "no set-id program is left in the image" || fail "set-id programs in the image: $out"

  step "without each option deskd fails closed"
  fail_closed "$name" "${net[@]}"
}

# fail_closed NAME [NET]: a deskd started without unmask=/proc/* keeps its desk stopped and
# says which step was refused; deskd doctor without the seccomp file names the other.
fail_closed() {
  local name=$1-bare dir out; shift
  dir=$(container_folder bare)
  run_deskd "$name" "$dir/run" "${host_options[@]}" --security-opt "seccomp=$root/images/seccomp.json" "$@"
  wait_ready "$dir/notify.log" 1 || fail "deskd without unmask=/proc/* did not start at all"
  out=$(ctl_in_mode "$deskctl" --socket "$dir/run/deskd.sock" ask example "prepare the day" 2>&1) &&
    fail "a turn ran without unmask=/proc/*: $out"
  expect_in "without unmask=/proc/*: the desk is kept stopped, naming the step" "$out" "mount a new /proc (/proc) failed"
  expect_in "without unmask=/proc/*: deskd names the option to add" "$out" "--security-opt unmask=/proc/*"
  out=$(pm run --rm "${host_options[@]}" --security-opt 'unmask=/proc/*' "$@" "$image" doctor 2>&1) || true
  expect_in "without the seccomp file (Podman's default): doctor names the refused step" "$out" "set the hostname failed"
  expect_in "without the seccomp file: doctor names the option to add" "$out" "seccomp=/usr/share/deskd/seccomp.json"
  expect_in "without the seccomp file: no full sandbox" "$out" "A full sandbox cannot start"
  if [ "$MODE" = rootful ]; then
    out=$(pm run --rm "${host_options[@]}" --security-opt 'unmask=/proc/*' --seccomp-policy=image "$image" doctor 2>&1) || true
    expect_in "--seccomp-policy=image (the RUN label's) uses the image's profile" "$out" "A full sandbox can start on this host."
    out=$(pm run --rm --runtime runc "${security_options[@]}" "$image" doctor 2>&1) || true
    echo "this host, without the lowered ulimits: ${out:0:200}"
  fi
}

# PODMAN_STOPPED says why Podman itself could not run the container: a failure under
# rootful Podman, a note under rootless (a host without what rootless Podman needs).
for mode in rootful rootless; do
  mode_use "$mode"
  started=$SECONDS
  PODMAN_STOPPED=
  if [ "$mode" = rootless ]; then
    step "loading the image into $IMAGE_TEST_USER's storage"
    podman save "$image" | pm load >/dev/null && rootless_image=1 ||
      PODMAN_STOPPED="podman load as $IMAGE_TEST_USER failed"
  fi
  if [ -z "$PODMAN_STOPPED" ]; then scenario || true; fi
  if [ -n "$PODMAN_STOPPED" ]; then
    if [ "$mode" = rootful ]; then fail "$PODMAN_STOPPED"
    else echo "NOTE: rootless Podman could not be tested here: $PODMAN_STOPPED"; fi
  fi
  echo "$mode: $((SECONDS - started)) s"
done

echo
echo "image_test: $((SECONDS - test_started)) s in all"
if [ "$failures" -ne 0 ]; then
  echo "image_test: $failures check(s) FAILED" >&2
  exit 1
fi
echo "image_test: every check passed"
