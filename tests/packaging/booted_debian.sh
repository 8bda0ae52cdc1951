# shellcheck shell=bash
# booted_debian.sh: boot a throwaway Debian 12 under systemd-nspawn for package tests.
#
# Source it from a bash test that runs as root:
#   . tests/packaging/booted_debian.sh
#   booted_debian_start "pkgtest-$$"   # builds the cached root first when needed
#   booted_debian_run "pkgtest-$$" systemctl is-system-running
#   booted_debian_stop "pkgtest-$$"    # also done by the EXIT trap this file installs
# Call booted_debian_start in the test shell itself, not in $(...) or a pipeline: the
# EXIT trap only knows containers started by its own shell.
#
# Layout, all under $BOOTED_DEBIAN_DIR (/var/tmp/deskd-packaging):
#   bookworm-<hash>/   pristine root, never booted; <hash> covers the package list and recipe
#   run/<NAME>/root    the working copy that is booted; deleted by booted_debian_stop
#   run/<NAME>/console.log, nspawn.pid, leader.pid, capbnd
#
# Why these choices:
# * A plain copy (cp -a --reflink=auto, about 1.5 s for the 250 MB root) instead of
#   --overlay/--volatile: the working root is an ordinary directory, so nspawn needs no
#   overlayfs support, nothing is mounted on the host, and removing it is one rm.
# * --register=no --keep-unit: the host has no systemd/machined as PID 1; without
#   --keep-unit nspawn wants the system bus to allocate a scope and fails to start.
# * No --private-network: the container shares the host network so apt inside can reach
#   the mirror. deskd inside makes its own net namespaces, which works regardless.
# * Commands enter with nsenter (machinectl needs machined) and are limited to the
#   container's capability bounding set, so they are no more privileged than the
#   container's own root.
# * cgroups: nspawn 252 picks the container's hierarchy from the host's (hybrid here,
#   unified on most CI hosts); SYSTEMD_NSPAWN_UNIFIED_HIERARCHY in the environment is
#   passed through if you need to force it.

BOOTED_DEBIAN_DIR=${BOOTED_DEBIAN_DIR:-/var/tmp/deskd-packaging}
BOOTED_DEBIAN_SUITE=bookworm
# Packages added to the minbase root. Changing the list (or _BD_RECIPE) makes a new root.
[ -n "${BOOTED_DEBIAN_PACKAGES+set}" ] || BOOTED_DEBIAN_PACKAGES=(systemd systemd-sysv dbus apt ca-certificates)
BOOTED_DEBIAN_BOOT_TIMEOUT=${BOOTED_DEBIAN_BOOT_TIMEOUT:-120}  # seconds until running
BOOTED_DEBIAN_STOP_TIMEOUT=${BOOTED_DEBIAN_STOP_TIMEOUT:-60}   # seconds until powered off
BOOTED_DEBIAN_APT_UPDATE=${BOOTED_DEBIAN_APT_UPDATE:-1}  # apt-get update after boot
BOOTED_DEBIAN_KEEP=${BOOTED_DEBIAN_KEEP:-0}              # 1: keep run/<NAME> after stop
# Extra systemd-nspawn options for the boot, e.g. (--private-network); an array.
[ -n "${BOOTED_DEBIAN_NSPAWN_ARGS+set}" ] || BOOTED_DEBIAN_NSPAWN_ARGS=()
_BD_RECIPE=1            # bump when the way the pristine root is made changes
_BD_NAMES=()            # containers started by this shell, stopped by the EXIT trap

_bd_log() { echo "booted_debian: $*" >&2; }
_bd_fail() { echo "booted_debian: FAIL: $*" >&2; return 1; }

# The first http(s) URI the host's apt uses for SUITE. apt itself parses its sources
# (sources.list and deb822 .sources alike); no downloaded index is needed.
_bd_host_mirror() {
  apt-get indextargets --no-release-info --format '$(TARGET_OF) $(RELEASE) $(SITE)' 2>/dev/null |
    awk -v s="$1" '$1 == "deb" && $2 == s && $3 ~ /^https?:\/\// { sub(/\/$/, "", $3); print $3; found = 1; exit }
                   END { exit !found }'
}

# Deletes DIR, first lazily unmounting anything still mounted below it (debootstrap
# mounts /proc in its target; a killed build may leave that behind).
_bd_remove() {
  local dir=$1 mnt
  [ -e "$dir" ] || return 0
  for mnt in $(awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
    umount -l "$mnt" || true
  done
  rm -rf --one-file-system "$dir"
}

_bd_require() {
  [ "$(id -u)" -eq 0 ] || { _bd_fail "must run as root"; return; }
  local tool
  for tool in debootstrap systemd-nspawn nsenter setpriv flock unshare; do
    command -v "$tool" >/dev/null || { _bd_fail "$tool is missing: run scripts/setup package"; return; }
  done
}

# Prints the path of the pristine root, building it first when it is not cached.
booted_debian_root() {
  _bd_require || return
  local hash root tmp log mirror security status lock
  hash=$({ printf '%s\n' "recipe=$_BD_RECIPE" "$BOOTED_DEBIAN_SUITE" minbase
           printf '%s\n' "${BOOTED_DEBIAN_PACKAGES[@]}" | sort -u; } | sha256sum | cut -c1-12)
  root=$BOOTED_DEBIAN_DIR/$BOOTED_DEBIAN_SUITE-$hash
  if [ -e "$root/.booted-debian-ok" ]; then echo "$root"; return; fi

  mkdir -p "$BOOTED_DEBIAN_DIR" || return
  # One builder at a time; a second test waits and then finds the finished root.
  exec {lock}>"$BOOTED_DEBIAN_DIR/.build.lock" || return
  flock "$lock"
  if [ -e "$root/.booted-debian-ok" ]; then exec {lock}>&-; echo "$root"; return; fi
  local old  # leftovers of interrupted builds
  for old in "$root" "$BOOTED_DEBIAN_DIR"/.build-*; do _bd_remove "$old"; done

  mirror=${BOOTED_DEBIAN_MIRROR:-$(_bd_host_mirror "$BOOTED_DEBIAN_SUITE" || echo http://deb.debian.org/debian)}
  security=${BOOTED_DEBIAN_SECURITY_MIRROR:-$(_bd_host_mirror "$BOOTED_DEBIAN_SUITE-security" ||
                                               echo http://deb.debian.org/debian-security)}
  tmp=$BOOTED_DEBIAN_DIR/.build-$hash.$$
  log=$BOOTED_DEBIAN_DIR/$BOOTED_DEBIAN_SUITE-$hash.build.log
  _bd_log "building $root from $mirror (log: $log)"
  status=0
  {
    # In a private mount namespace, so its mounts in the target die with it.
    unshare --mount --propagation private debootstrap --variant=minbase --include="$(IFS=,; echo "${BOOTED_DEBIAN_PACKAGES[*]}")" \
      "$BOOTED_DEBIAN_SUITE" "$tmp" "$mirror" &&
    # apt inside: the same mirrors as the host, with updates and security like a real install.
    printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
      "$mirror" "$BOOTED_DEBIAN_SUITE" "$mirror" "$BOOTED_DEBIAN_SUITE" \
      "$security" "$BOOTED_DEBIAN_SUITE" > "$tmp/etc/apt/sources.list" &&
    # nspawn in plain (non-boot) mode gives apt a real /proc, /dev and the host's resolv.conf.
    systemd-nspawn -q -D "$tmp" --machine="bd-build-$$" --register=no --keep-unit --pipe \
      --setenv=DEBIAN_FRONTEND=noninteractive -- /bin/sh -c \
      'apt-get update -q && apt-get -y -q dist-upgrade && apt-get clean' </dev/null
  } >"$log" 2>&1 || status=$?
  rm -rf --one-file-system "/run/systemd/nspawn/propagate/bd-build-$$"  # see booted_debian_stop
  if [ "$status" -ne 0 ]; then
    tail -n 30 "$log" >&2
    _bd_remove "$tmp"; exec {lock}>&-
    _bd_fail "building the $BOOTED_DEBIAN_SUITE root failed (status $status, log: $log)"; return
  fi
  # Each working copy gets its own machine-id (booted_debian_start); dbus follows it.
  : > "$tmp/etc/machine-id"
  ln -sf /etc/machine-id "$tmp/var/lib/dbus/machine-id"
  # Fallback only: nspawn copies the host's resolv.conf in at boot (--resolv-conf=auto).
  cp -L /etc/resolv.conf "$tmp/etc/resolv.conf" 2>/dev/null || true
  printf '%s\n' "mirror=$mirror" "security=$security" "packages=${BOOTED_DEBIAN_PACKAGES[*]}" \
    "built=$(date -u +%FT%TZ)" > "$tmp/.booted-debian-ok"
  mv -T "$tmp" "$root" || { exec {lock}>&-; return 1; }  # atomic: a root exists only when complete
  exec {lock}>&-
  echo "$root"
}

_bd_state() { echo "$BOOTED_DEBIAN_DIR/run/$1"; }

# True while PID is a live (not zombie) systemd-nspawn.
_bd_alive() {
  local stat
  [ -n "${1:-}" ] && stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  [[ $stat == "$1 (systemd-nspaw"*") "[!ZX]* ]]
}

# Removes run/<NAME> directories whose nspawn is gone (left by a test that was killed).
_bd_sweep() {
  local state
  for state in "$BOOTED_DEBIAN_DIR"/run/*/; do
    [ -e "$state/nspawn.pid" ] || continue
    _bd_alive "$(cat "$state/nspawn.pid")" || _bd_remove "${state%/}"
  done
}

# booted_debian_start NAME: boots a fresh copy of the pristine root as container NAME and
# waits until systemd inside is running (or degraded). Returns non-zero, loudly, otherwise.
booted_debian_start() {
  local name=${1:?usage: booted_debian_start NAME} pristine state root pid leader child
  [[ $name =~ ^[A-Za-z0-9][A-Za-z0-9-]{0,63}$ ]] || { _bd_fail "bad container name '$name'"; return; }
  pristine=$(booted_debian_root) || return
  state=$(_bd_state "$name"); root=$state/root
  mkdir -p "$BOOTED_DEBIAN_DIR/run"; _bd_sweep
  [ ! -e "$state" ] || { _bd_fail "$state exists: is container $name running already?"; return; }
  local start=$SECONDS
  if ! { mkdir -p "$state" && cp -a --reflink=auto "$pristine" "$root"; }; then
    _bd_fail "copying $pristine to $root"; return
  fi
  local copied=$((SECONDS - start)); start=$SECONDS
  rm -f "$root/.booted-debian-ok"
  tr -d '-' < /proc/sys/kernel/random/uuid > "$root/etc/machine-id"
  echo "$name" > "$root/etc/hostname"
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost\n' "$name" > "$root/etc/hosts"

  _BD_NAMES+=("$name")
  # --console=read-only: systemd's console output goes to console.log, nothing is read.
  systemd-nspawn -q -b -D "$root" --machine="$name" --register=no --keep-unit \
    --console=read-only "${BOOTED_DEBIAN_NSPAWN_ARGS[@]}" </dev/null >"$state/console.log" 2>&1 &
  pid=$!
  echo "$pid" > "$state/nspawn.pid"

  # Until systemctl inside says "running" (or degraded...): find the leader, the container's
  # PID 1, i.e. nspawn's child in another pid namespace (nspawn's short-lived outer child
  # shares ours; one that just exited reads as ""), then ask it; no answer yet, "starting"
  # and "initializing" mean keep waiting.
  local own_ns child_ns status=
  own_ns=$(readlink /proc/self/ns/pid); leader=
  while _bd_alive "$pid" && [ $((SECONDS - start)) -lt "$BOOTED_DEBIAN_BOOT_TIMEOUT" ]; do
    if [ -z "$leader" ] || [ ! -e "/proc/$leader" ]; then
      leader=
      for child in $(cat "/proc/$pid/task/$pid/children" 2>/dev/null); do
        child_ns=$(readlink "/proc/$child/ns/pid" 2>/dev/null) || continue
        [ -n "$child_ns" ] && [ "$child_ns" != "$own_ns" ] && leader=$child
      done
      [ -n "$leader" ] || { sleep 0.1; continue; }
      echo "$leader" > "$state/leader.pid"
    fi
    rm -f "$state/capbnd"   # booted_debian_run reads it after systemd has exec'd
    status=$(booted_debian_run "$name" systemctl is-system-running 2>/dev/null) || true
    case $status in running|degraded|maintenance|stopping) break ;; esac
    sleep 0.5
  done
  case $status in
    running) _bd_log "$name is running after $((SECONDS - start)) s (copying the root took $copied s)" ;;
    degraded)
      _bd_log "$name is degraded after $((SECONDS - start)) s; failed units:"
      booted_debian_run "$name" systemctl --failed --no-pager --no-legend >&2 || true ;;
    *)
      { echo "---- last lines of $state/console.log"; tail -n 40 "$state/console.log"; echo ----; } >&2
      _bd_fail "container $name did not boot within ${BOOTED_DEBIAN_BOOT_TIMEOUT} s" \
               "(nspawn $(_bd_alive "$pid" && echo running || echo exited)," \
               "leader ${leader:-none} $(cat "/proc/${leader:-0}/comm" 2>/dev/null), state '${status:-none}')"
      booted_debian_stop "$name"
      return 1 ;;
  esac
  if [ "$BOOTED_DEBIAN_APT_UPDATE" = 1 ]; then
    # The cached indexes can be older than the mirror; refresh so Depends resolve.
    booted_debian_run "$name" apt-get update -qq >&2 || { _bd_fail "apt-get update inside $name"; return; }
  fi
}

# booted_debian_run NAME CMD [ARG...]: runs CMD as root inside the booted container with a
# clean environment; stdin, stdout, stderr and the exit status are CMD's.
booted_debian_run() {
  local name=${1:?usage: booted_debian_run NAME CMD...} state leader bnd
  shift
  state=$(_bd_state "$name")
  if ! leader=$(cat "$state/leader.pid" 2>/dev/null) || [ ! -e "/proc/$leader" ]; then
    _bd_fail "container $name is not running"; return
  fi
  if [ ! -s "$state/capbnd" ]; then
    # The container's bounding set as setpriv names ("-all,+chown,+kill,..."); setpriv
    # --list-caps prints the names in capability-number order.
    local mask i=0 capname
    mask=$((16#$(awk '/^CapBnd:/ { print $2 }' "/proc/$leader/status")))
    bnd=-all
    while read -r capname; do
      (( (mask >> i) & 1 )) && bnd+=",+$capname"
      i=$((i + 1))
    done < <(setpriv --list-caps)
    echo "$bnd" > "$state/capbnd"
  fi
  bnd=$(<"$state/capbnd")
  # --all: every namespace of PID 1; -r/-w: its root and working directory. setpriv and env
  # are the container's own binaries, run after entering.
  nsenter --target "$leader" --all -r -w -- \
    /usr/bin/setpriv --bounding-set "$bnd" -- \
    /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 TERM=dumb PAGER=cat SYSTEMD_PAGER= \
      SYSTEMD_COLORS=0 DEBIAN_FRONTEND=noninteractive "$@"
}

# booted_debian_copy_in NAME HOSTFILE DEST: copies a host file into the container, keeping
# its mode; DEST may be a directory. Streams through the container's own shell, so symlinks
# in DEST resolve inside the container, never on the host.
booted_debian_copy_in() {
  local name=${1:?} src=${2:?usage: booted_debian_copy_in NAME HOSTFILE DEST} dest=${3:?}
  [ -f "$src" ] || { _bd_fail "copy_in: $src is not a file"; return; }
  booted_debian_run "$name" /bin/sh -c \
    'd=$1; [ -d "$d" ] && d=$d/$2; cat > "$d" && chmod "$3" "$d"' \
    sh "$dest" "$(basename "$src")" "$(stat -c %a "$src")" < "$src"
}

# booted_debian_copy_out NAME FILE HOSTFILE: copies a file out of the container.
booted_debian_copy_out() {
  local name=${1:?} src=${2:?usage: booted_debian_copy_out NAME FILE HOSTFILE} dest=${3:?}
  booted_debian_run "$name" /bin/cat -- "$src" > "$dest"
}

# booted_debian_stop NAME: powers the container off (bounded), kills it if it does not go,
# and deletes its working root. Safe to call twice and on a container that failed to boot.
booted_debian_stop() {
  local name=${1:?usage: booted_debian_stop NAME} state pid leader start=$SECONDS rc=0
  state=$(_bd_state "$name")
  [ -e "$state" ] || return 0
  pid=$(cat "$state/nspawn.pid" 2>/dev/null) || pid=
  leader=$(cat "$state/leader.pid" 2>/dev/null) || leader=
  if _bd_alive "$pid"; then
    # SIGRTMIN+4 asks systemd for poweroff.target; SIGTERM makes nspawn send its own
    # shutdown signal, which also covers a container whose systemd never started.
    if [ -n "$leader" ]; then kill -s RTMIN+4 "$leader" 2>/dev/null || true; fi
    kill -s TERM "$pid" 2>/dev/null || true
    while _bd_alive "$pid" && [ $((SECONDS - start)) -lt "$BOOTED_DEBIAN_STOP_TIMEOUT" ]; do sleep 0.2; done
    if _bd_alive "$pid"; then
      _bd_log "$name did not power off within ${BOOTED_DEBIAN_STOP_TIMEOUT} s; killing it"
      tail -n 20 "$state/console.log" >&2
      # Killing PID 1 of the container kills its whole pid namespace; then nspawn exits.
      if [ -n "$leader" ]; then kill -s KILL "$leader" 2>/dev/null || true; fi
      sleep 2; kill -s KILL "$pid" 2>/dev/null || true
      rc=1
    else
      _bd_log "$name stopped after $((SECONDS - start)) s"
    fi
  fi
  wait "$pid" 2>/dev/null || true   # reap it when it is our child
  # With /run on disk (no tmpfs) nspawn refuses to remove this directory itself.
  rm -rf --one-file-system "/run/systemd/nspawn/propagate/$name"
  if [ "$BOOTED_DEBIAN_KEEP" = 1 ]; then
    _bd_log "kept $state"
  else
    _bd_remove "$state"  # nspawn mounts only in its own namespace; _bd_remove checks anyway
  fi
  local kept=() n
  for n in "${_BD_NAMES[@]}"; do [ "$n" = "$name" ] || kept+=("$n"); done
  _BD_NAMES=("${kept[@]}")
  return "$rc"
}

# Stops every container this shell started. Installed as the EXIT trap; a test that needs
# its own EXIT trap must call booted_debian_cleanup from it.
booted_debian_cleanup() {
  local rc=$? name
  for name in "${_BD_NAMES[@]}"; do booted_debian_stop "$name" || true; done
  return "$rc"
}
trap booted_debian_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
