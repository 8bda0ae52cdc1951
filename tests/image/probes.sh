#!/usr/bin/env bash
# Escape attempts from inside a desk's sandbox, run by the desk's own bash under a deskd
# that itself runs in a Podman container (tests/image/image_test.sh puts this file in the
# desk's folder and has a scripted desk run `bash probes.sh`). Each probe prints
# `PASS name` or `FAIL name: what happened`; the last line counts them. Exit 1 on a FAIL.
#
# The image has no compiler and no python3, so raw system calls go through perl's
# builtin syscall() (perl-base is Essential in Debian): it returns -1 and sets errno like
# libc. Expected refusals are EPERM (deskd's seccomp profile answers that), or what the
# kernel answers first when even the call's preconditions are missing.
#
# Environment: PROBES_CANARY_NAME, a variable only deskd's environment holds;
# PROBES_TMP_MARKER, a file the test made in the container's /tmp.
set -uo pipefail   # not -e: every probe runs, whatever the one before it did

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
# expect NAME WHAT COMMAND...: PASS when COMMAND succeeds.
expect() { local name=$1 what=$2; shift 2; if "$@" >/dev/null 2>&1; then pass "$name"; else fail "$name" "$what"; fi; }
# refuse NAME COMMAND...: PASS when COMMAND fails; FAIL shows its output.
refuse() {
  local name=$1 out; shift
  if out=$("$@" 2>&1); then fail "$name" "it worked: ${out:0:200}"; else pass "$name"; fi
}

# sys NAME NUMBER ARG...: makes the call; prints "ok N" or "errno NAME". Numeric arguments
# are passed as integers, others as pointers to their bytes (zero-filled buffers: "z64").
# The number is passed on its own: syscall(@list) would take the list's length.
sys() {
  perl -e '
    use Errno;
    my ($name, @args) = @ARGV;
    @args = map { /^-?\d+$/ ? $_ + 0 : /^z(\d+)$/ ? "\0" x $1 : $_ } @args;
    my $r = syscall(shift @args, @args);
    if ($r == 0 && $name =~ /^clone/) { exec "/bin/true" }   # a child that got through
    if ($r == -1) { my $e = $! + 0; my ($n) = grep { $!{$_} } keys %!; print "errno ", $n // $e, "\n" }
    else { print "ok $r\n" }' "$@" 2>&1
}
# refused NAME NUMBER ARG...: PASS when the call fails with EPERM (or an errno listed in
# REFUSED_ALSO); "ok" is an escape.
refused() {
  local name=$1 got; shift
  got=$(sys "$name" "$@")
  case " errno EPERM ${REFUSED_ALSO:-} " in
    *" $got "*) pass "$name" ;;
    *) fail "$name" "got '$got'" ;;
  esac
}

canary=${PROBES_CANARY_NAME:-DESKD_IMAGE_CANARY}
status=$(cat /proc/self/status)
field() { awk -v f="$1:" '$1 == f { print $2 }' <<<"$status"; }

# --- Nothing of deskd: its process, memory and environment are out of sight.
comm1=$(cat /proc/1/comm 2>/dev/null)
[[ $comm1 == *deskd-ini* ]] && pass pid1_is_deskd_init || fail pid1_is_deskd_init "pid 1 is '$comm1'"
seen=""
for dir in /proc/[0-9]*; do
  c=$(cat "$dir/comm" 2>/dev/null) || continue
  case $c in deskd|deskd-full|conmon|catatonit|podman|runc) seen+=" ${dir#/proc/}:$c" ;; esac
  case "$(readlink "$dir/exe" 2>/dev/null)" in
    /usr/sbin/deskd | /usr/libexec/deskd/deskd-full) seen+=" ${dir#/proc/}:exe=deskd" ;;
  esac
done
[ -z "$seen" ] && pass no_deskd_or_container_process || fail no_deskd_or_container_process "visible:$seen"
env1=$({ tr '\0' '\n' </proc/1/environ; } 2>/dev/null)
[ -z "$env1" ] && pass pid1_environ_empty_or_unreadable || fail pid1_environ_empty_or_unreadable "read: ${env1:0:200}"
refuse pid1_mem_unreadable dd if=/proc/1/mem bs=1 count=1 skip=4194304 status=none
refuse pid1_root_unreachable ls /proc/1/root/var/lib/deskd/state
leak=$(grep -l "$canary=" /proc/[0-9]*/environ 2>/dev/null; env | grep "^$canary=")
[ -z "$leak" ] && pass no_deskd_environment || fail no_deskd_environment "found in: $leak"

# --- No privilege, no way back.
caps=$(for c in CapInh CapPrm CapEff CapBnd CapAmb; do field "$c"; done | sort -u)
[ "$caps" = 0000000000000000 ] && pass capabilities_all_zero || fail capabilities_all_zero "$(grep ^Cap /proc/self/status | tr '\n' ' ')"
[ "$(field NoNewPrivs)" = 1 ] && pass no_new_privs || fail no_new_privs "NoNewPrivs $(field NoNewPrivs)"
[ "$(field Seccomp)" = 2 ] && pass seccomp_filter_mode || fail seccomp_filter_mode "Seccomp $(field Seccomp)"
[ "$(id -u)" != 0 ] && pass uid_not_root || fail uid_not_root "uid 0"
# chage is setgid shadow: were set-id bits honoured, it could read /etc/shadow.
refuse setid_binaries_useless chage -l "$(id -un)"

# Control: the call helper itself works (an allowed call answers).
[[ $(sys getpid 39) == "ok "* ]] && pass syscall_helper_works || fail syscall_helper_works "getpid: $(sys getpid 39)"

# --- Namespaces, mounts and the kernel's big attack surfaces (x86_64 numbers).
refuse mount_tool mount -t tmpfs none scratch
refused mount 165 none scratch tmpfs 0 0
refused umount2 166 / 2
refused pivot_root 155 scratch scratch
refuse unshare_tool unshare --user --map-root-user true
refused unshare_user 272 268435456
refused unshare_mount 272 131072
refused clone_newuser 56 268435473 0 0 0 0
exec {nsfd}</proc/self/ns/net
refused setns 308 "$nsfd" 0
exec {nsfd}<&-
refused fsopen 430 tmpfs 0
refused open_tree 428 -100 / 1
refused ptrace_attach 101 16 1 0 0
refused ptrace_traceme 101 0 0 0 0
refused process_vm_readv 310 1 0 0 0 0 0
refused bpf 321 0 z128 128
refused perf_event_open 298 z128 0 -1 -1 0
refused userfaultfd 323 0
refused io_uring_setup 425 1 z120
refused keyctl 250 0 -3 0
refused add_key 248 user probe z8 8 -3
refused finit_module 313 0 "" 0
refused kexec_load 246 0 0 0 0
refused open_by_handle_at 304 -100 z16 0
refused sethostname_in_desk 170 escaped 7
REFUSED_ALSO="errno ENOSYS" refused clone3 435 z88 88
# A host Unix socket in view could not be told from the desk's own: AF_UNIX is refused.
refused socket_af_unix 41 1 1 0
refused socket_af_vsock 41 40 1 0
refuse dmesg dmesg

# --- Its own view: deskd's state, its socket and other desks are not there.
refuse state_folder_hidden ls /var/lib/deskd/state
refuse journal_unreadable cat /var/lib/deskd/state/desks/example/journal.jsonl
refuse other_desk_hidden ls /var/lib/deskd/desks/example
[ ! -e /run/deskd/deskd.sock ] && pass control_socket_absent || fail control_socket_absent "$(ls -l /run/deskd/deskd.sock)"
refuse hidden_path_masked grep -q . secret.txt
refuse container_tmp_hidden test -e "/tmp/${PROBES_TMP_MARKER:-deskd-image-marker}"
extra=""
for dev in /dev/*; do
  case ${dev#/dev/} in fd|full|null|ptmx|pts|random|shm|stderr|stdin|stdout|tty|urandom|zero) ;;
    *) extra+=" ${dev#/dev/}" ;; esac
done
[ -z "$extra" ] && pass dev_minimal || fail dev_minimal "more than the minimal devices:$extra"
[ "$(hostname)" = probes ] && pass hostname_is_the_desks || fail hostname_is_the_desks "hostname $(hostname)"
ifaces=$(awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' /proc/net/dev | tr '\n' ' ')
[ "$ifaces" = "lo " ] && pass network_only_loopback || fail network_only_loopback "interfaces: $ifaces"
refuse no_route_out timeout 5 bash -c 'exec 3<>/dev/tcp/10.88.0.1/53'
# kill(2) can name only the sandbox's own processes: every pid outside is ESRCH.
outside=""
for ((p = 2; p <= 4096; p++)); do
  if kill -0 "$p" 2>/dev/null && [ ! -d "/proc/$p" ]; then outside+=" $p"; fi
done
[ -z "$outside" ] && pass kill_outside_impossible || fail kill_outside_impossible "signalled:$outside"

# --- Writes only where the desk may write.
refuse write_desk_readme sh -c 'echo escaped >> README.md'
refuse write_usr touch /usr/escaped
refuse write_etc touch /etc/escaped
refuse write_etc_deskd_config sh -c 'echo "# escaped" >> /etc/deskd/deskd.toml'
refuse write_sys touch /sys/escaped
refuse write_proc_sys_core_pattern test -w /proc/sys/kernel/core_pattern
refuse write_sysrq_trigger test -w /proc/sysrq-trigger
# Controls: the probes above mean nothing if the desk could do nothing at all.
expect write_scratch_works "cannot write scratch/" sh -c 'echo ok > scratch/probe && grep -q ok scratch/probe'
expect loopback_up "no listener should answer 'refused', got another error" \
  bash -c 'out=$(timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/9" 2>&1); [[ $out == *"refused"* ]]'

echo "probes: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
