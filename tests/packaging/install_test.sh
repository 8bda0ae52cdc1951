#!/usr/bin/env bash
# The Debian package on a booted Debian 12 (issue 13): builds the package twice (the
# project's version and a higher one), boots a fresh Debian 12 under systemd-nspawn, and
# inside it: installs the package with apt-get (so its Depends come from the mirror), then
# checks that the service is active, deskctl desks and deskctl ask work on the example desk
# (its bash in its sandbox, under the service), a desk added to the config appears after
# systemctl reload while a turn on another desk goes on, deskd's journal entries have real
# priorities, one entry per message and DESK=/TRIGGER= fields (issue 28), systemd-analyze
# security is at most 2.5, systemctl stop exits cleanly, an upgrade keeps /etc/deskd and /var/lib/deskd, and a
# purge leaves no deskd file or unit. Fails loudly, never skips, when nspawn cannot boot.
# Run as root (scripts/test runs it).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/booted_debian.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "install_test: FAIL: needs root (debootstrap and systemd-nspawn)" >&2
  exit 1
fi

failures=0
step() { printf '\n== install_test: %s\n' "$*"; }
fail() { echo "install_test: FAIL: $*" >&2; failures=$((failures + 1)); }
expect_in() {  # expect_in WHAT TEXT NEEDLE
  if [[ "$2" == *"$3"* ]]; then echo "ok: $1"; else fail "$1: no '$3' in:"$'\n'"$2"; fi
}

step "building the packages"
version=$(sed -n 's/^project(deskd VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
higher="$version.1"
first=$("$root/scripts/package" | tail -n 1)
second=$("$root/scripts/package" --version "$higher" | tail -n 1)
echo "$first"; echo "$second"

step "booting Debian 12"
name=deskd-install-$$
booted_debian_start "$name"
inside() { booted_debian_run "$name" "$@"; }
# wait_for_journal NEEDLE: true once deskd's unit log holds NEEDLE, false after 10 s.
# journald reads its socket on its own time, so a line deskd sent just before it answered
# (or exited) may be read a moment later: 1 run in 3 missed "deskd stopped" on a busy host.
wait_for_journal() {
  for _ in $(seq 1 20); do
    inside journalctl -u deskd --no-pager -o cat | grep -qF -- "$1" && return 0
    sleep 0.5
  done
  return 1
}
booted_debian_copy_in "$name" "$first" /root/
booted_debian_copy_in "$name" "$second" /root/

step "apt-get install ./$(basename "$first")"
inside sh -c "cd /root && apt-get install -y -q ./$(basename "$first")" | tail -n 3
inside systemctl is-active deskd || { fail "deskd is not active"; inside journalctl -u deskd --no-pager -n 50; }

step "deskctl on the example desk"
desks=$(inside deskctl desks 2>&1 || true)
expect_in "deskctl desks lists the example desk" "$desks" "example"
asked=$(inside deskctl ask example "prepare the day" 2>&1) || fail "deskctl ask example failed: $asked"
expect_in "the example desk's turn finished" "$asked" "turn finished"

step "a desk added by a reload while another desk's turn runs"
# Two desks with scripts of their own: "slow" takes a while; "added" shows its sandbox.
inside sh -c 'install -d -o deskd -g deskd -m 0750 /var/lib/deskd/desks/slow /var/lib/deskd/desks/added /var/lib/deskd/scripts'
inside sh -c 'cat > /var/lib/deskd/scripts/slow.jsonl' <<'EOF'
{"steps": [{"text": "working", "tool_calls": [{"name": "bash", "input": {"command": "sleep 6; echo slow-$((40 + 2))"}}]}, {"text": "slow finished"}]}
EOF
inside sh -c 'cat > /var/lib/deskd/scripts/added.jsonl' <<'EOF'
{"steps": [{"text": "looking", "tool_calls": [{"name": "bash", "input": {"command": "echo pid1=$(tr '\\0' ' ' < /proc/1/cmdline); echo uid=$(id -u); ls /var/lib/deskd/state 2>&1 | head -1; echo environs-with-deskds=$(grep -l -e NOTIFY_SOCKET -e INVOCATION_ID /proc/[0-9]*/environ 2>/dev/null | wc -l); echo serve-cmdlines=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c 'desk[d] serve')"}}]}, {"text": "looked"}]}
EOF
desk_table() {
  printf '\n[[desk]]\nname = "%s"\ndirectory = "/var/lib/deskd/desks/%s"\n[desk.model]\nscript = "/var/lib/deskd/scripts/%s.jsonl"\n' "$1" "$1" "$1"
}
desk_table slow | inside sh -c 'cat >> /etc/deskd/deskd.toml'
inside systemctl reload deskd || { fail "the reload that adds slow failed"; inside journalctl -u deskd --no-pager -n 30; }
# The slow turn, in the background inside the container.
inside sh -c 'setsid sh -c "deskctl ask slow go > /root/slow.out 2>&1; echo \$? > /root/slow.status" < /dev/null > /dev/null 2>&1 &'
for _ in $(seq 50); do
  inside deskctl status slow 2>/dev/null | grep -q running && break
  sleep 0.1
done
desk_table added | inside sh -c 'cat >> /etc/deskd/deskd.toml'
started=$SECONDS
inside systemctl reload deskd || { fail "systemctl reload deskd failed"; inside journalctl -u deskd --no-pager -n 30; }
[ $((SECONDS - started)) -lt 5 ] || fail "the reload waited for slow's turn ($((SECONDS - started)) s)"
expect_in "the added desk is listed after the reload" "$(inside deskctl desks 2>&1)" "added"
expect_in "slow's turn still runs after the reload" "$(inside deskctl status slow 2>&1)" "running"
for _ in $(seq 100); do inside test -s /root/slow.status && break; sleep 0.2; done
# slow-42 is in the command's output only, never in the command deskctl prints.
expect_in "slow's turn finished after the reload" "$(inside cat /root/slow.out 2>&1)" "slow-42"
[ "$(inside cat /root/slow.status 2>/dev/null)" = 0 ] || fail "deskctl ask slow did not exit 0"
looked=$(inside deskctl ask added look 2>&1) || fail "deskctl ask added failed: $looked"
expect_in "the added desk's bash runs under deskd-init" "$looked" "pid1=deskd-init"
expect_in "the added desk cannot see deskd's state" "$looked" "No such file or directory"
expect_in "no process in sight holds deskd's environment" "$looked" "environs-with-deskds=0"
expect_in "no process in sight is deskd itself" "$looked" "serve-cmdlines=0"
uid=$(inside id -u deskd)
expect_in "the desk runs as the service's unprivileged user" "$looked" "uid=$uid"

step "the socket is for root and the deskd group"
inside useradd --create-home --groups deskd member
inside useradd --create-home stranger
inside runuser -u member -- deskctl desks >/dev/null || fail "a member of the deskd group cannot use deskctl"
if inside runuser -u stranger -- deskctl desks >/dev/null 2>&1; then fail "a user outside the deskd group used deskctl"; fi
expect_in "root uses the socket in /run/deskd" "$(inside stat -c '%U:%G %a' /run/deskd/deskd.sock)" "deskd:deskd 660"
expect_in "the config is root's and the deskd group's only" "$(inside stat -c '%U:%G %a' /etc/deskd/deskd.toml)" "root:deskd 640"
if inside runuser -u stranger -- cat /etc/deskd/deskd.toml >/dev/null 2>&1; then fail "a user outside the deskd group read the config"; fi

step "a config with a problem is refused and the running one kept"
inside cp /etc/deskd/deskd.toml /root/deskd.toml.good
printf '\n[[desk]]\nname = "broken"\ndirectory = "/var/lib/deskd/desks/no-such-desk"\n' | inside sh -c 'cat >> /etc/deskd/deskd.toml'
if inside systemctl reload deskd 2>/dev/null; then fail "systemctl reload took a config with a problem"; fi
inside systemctl is-active deskd || fail "deskd is not active after a refused reload"
wait_for_journal "no-such-desk" || true  # the checks below say what is missing
expect_in "the refusal names the file and line" "$(inside journalctl -u deskd --no-pager -o cat -n 20)" "/etc/deskd/deskd.toml:"
expect_in "the refusal names the missing desk folder" "$(inside journalctl -u deskd --no-pager -o cat -n 20)" "no-such-desk"
inside deskctl desks 2>&1 | grep -Eq '^added +(idle|running)' || fail "the added desk is not running after a refused reload"
inside cp /root/deskd.toml.good /etc/deskd/deskd.toml
watchdog=$(inside systemctl show deskd -p WatchdogTimestampMonotonic --value)
[ "${watchdog:-0}" -gt 0 ] || fail "systemd saw no WATCHDOG=1 from deskd"
state=$(inside systemctl show deskd -p Type -p NotifyAccess --value | tr '\n' ' ')
[ "$state" = "notify main " ] || fail "the unit is not Type=notify with NotifyAccess=main: $state"

step "journald: real priorities, one entry per message, DESK= and TRIGGER="
# deskd's own entries come through the journal's native protocol (_TRANSPORT=journal);
# deskctl reload's output, in the same unit, is stream lines and left out here.
own() { inside journalctl -u deskd SYSLOG_IDENTIFIER=deskd _TRANSPORT=journal --no-pager "$@"; }
expect_in "journalctl -p warning shows the refused reload" "$(own -p warning -o cat)" "reload refused"
expect_in "the refused reload is an error (priority 3)" "$(own -p 3..3 -o cat)" "reload refused"
refusal_entries=$(own -o json | grep 'no-such-desk' || true)
expect_in "the refusal and its problem lines are one entry" "$refusal_entries" 'reload refused'
expect_in "that entry's message keeps its lines" "$refusal_entries" '\n/etc/deskd/deskd.toml:'
split=$(inside journalctl -u deskd SYSLOG_IDENTIFIER=deskd --no-pager -o json | grep 'no-such-desk' | grep -vc 'reload refused' || true)
[ "$split" = 0 ] || fail "$split entries hold a line of the refused reload without the rest"
expect_in "a desk's line carries DESK=" "$(own DESK=example -o cat)" "desk example started"
# -o verbose prints each field on a line of its own ("    TRIGGER=..."); -F takes no match.
trigger=$(own DESK=example -o verbose | awk '/^ *TRIGGER=/ { sub(/^ *TRIGGER=/, ""); if (!seen) print; seen = 1 }' || true)
[ -n "$trigger" ] || fail "no entry about the example desk carries TRIGGER="
[ -z "$trigger" ] || expect_in "an entry with TRIGGER=$trigger names it" "$(own TRIGGER="$trigger" -o cat)" "$trigger"
# A desk kept stopped: the place of its journal is taken by a folder.
inside sh -c 'install -d -o deskd -g deskd -m 0750 /var/lib/deskd/desks/jammed /var/lib/deskd/state/desks/jammed /var/lib/deskd/state/desks/jammed/journal.jsonl'
inside cp /var/lib/deskd/scripts/added.jsonl /var/lib/deskd/scripts/jammed.jsonl
desk_table jammed | inside sh -c 'cat >> /etc/deskd/deskd.toml'
# deskctl reload exits non-zero when a desk failed to start, so systemctl says the job failed.
inside systemctl reload deskd 2>/dev/null || true
for _ in $(seq 50); do own DESK=jammed -o cat | grep -q "kept stopped" && break; sleep 0.2; done
expect_in "journalctl -p warning shows the desk kept stopped" "$(own -p warning -o cat)" "desk jammed is kept stopped"
expect_in "journalctl DESK=jammed shows it" "$(own DESK=jammed -o cat)" "desk jammed is kept stopped"
expect_in "the desk kept stopped is an error (priority 3)" "$(own DESK=jammed -p 3..3 -o cat)" "is kept stopped"
expect_in "its DESK_FAILED is a warning (priority 4)" "$(own DESK=jammed -p 4..4 -o cat)" "jammed: DESK_FAILED"
at_info=$(own DESK=jammed PRIORITY=6 -o cat)
if [[ "$at_info" == *"kept stopped"* || "$at_info" == *"DESK_FAILED"* ]]; then fail "the failure is at priority 6: $at_info"; fi
inside cp /root/deskd.toml.good /etc/deskd/deskd.toml
inside systemctl reload deskd || fail "the reload that removes jammed failed"

step "systemd-analyze security deskd.service"
security=$(inside systemd-analyze security deskd.service --no-pager 2>&1 | tail -n 1)
echo "$security"
exposure=$(sed -n 's/.*exposure level for deskd.service: \([0-9.]*\).*/\1/p' <<<"$security")
if [ -z "$exposure" ] || ! awk -v e="$exposure" 'BEGIN { exit !(e <= 2.5) }'; then
  fail "exposure '$exposure' is above 2.5"
else
  echo "ok: exposure $exposure <= 2.5"
fi

step "an upgrade to $higher keeps /etc/deskd and /var/lib/deskd"
inside sh -c "cd /root && apt-get install -y -q ./$(basename "$second")" | tail -n 3
installed=$(inside dpkg-query -W -f='${Version}' deskd)
[ "$installed" = "$higher" ] || fail "after the upgrade deskd is at '$installed', not $higher"
expect_in "the config kept its added desks" "$(inside cat /etc/deskd/deskd.toml)" 'name = "added"'
expect_in "the config is still root's and the deskd group's only" "$(inside stat -c '%U:%G %a' /etc/deskd/deskd.toml)" "root:deskd 640"
inside test -s /var/lib/deskd/state/desks/added/journal.jsonl || fail "the added desk's journal is gone"
inside systemctl is-active deskd || fail "deskd is not active after the upgrade"
expect_in "the added desk runs after the upgrade" "$(inside deskctl desks 2>&1)" "added"

step "systemctl stop"
inside systemctl stop deskd || fail "systemctl stop deskd failed"
result=$(inside systemctl show deskd -p Result -p ExecMainStatus --value | tr '\n' ' ')
[ "$result" = "success 0 " ] || fail "deskd did not stop cleanly: Result ExecMainStatus = $result"
wait_for_journal "deskd stopped" || fail "deskd did not log that it stopped (looked for 10 s)"

step "apt-get purge"
inside apt-get purge -y -q deskd | tail -n 2
left=$(inside find / -xdev \( -path /proc -o -path /sys -o -path /root -o -path /home -o -path /var/log/journal \) -prune \
  -o -name '*deskd*' -print 2>/dev/null || true)
[ -z "$left" ] || fail "the purge left: $left"
inside test ! -e /etc/deskd || fail "/etc/deskd is still there"
inside test ! -e /var/lib/deskd || fail "/var/lib/deskd is still there"

step "powering off"
booted_debian_stop "$name"
if [ "$failures" -gt 0 ]; then
  echo "install_test: $failures failure(s)" >&2
  exit 1
fi
echo "install_test: ok"
