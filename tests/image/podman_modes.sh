# shellcheck shell=bash
# podman_modes.sh: run Podman, and the host-side tools that talk to its containers, either
# as root (rootful) or as an unprivileged user with subordinate ids (rootless), behind the
# same few functions, so tests/image/image_test.sh runs one scenario twice.
#
#   . tests/image/podman_modes.sh
#   mode_use rootful|rootless        # rootless: makes the user first (see mode_rootless_user)
#   pm run ...                       # podman, as the mode's user
#   as_mode CMD...                   # any host command, as the mode's user
#   ctl_in_mode CMD...               # a host command that must reach into the container's
#                                    # ids (deskctl on the shared socket, reading a volume)
#   vol_cat VOLUME PATH              # a file in a named volume, read on the host
#
# Why ctl_in_mode: under rootless Podman the container's deskd user is a subordinate uid of
# the host user, so the socket (mode 0660, deskd's group) is not the host user's to open.
# `podman unshare` runs the host command as root of the rootless user namespace: it may
# open the socket, and deskd sees it as uid 0, which the packaged config allows. Rootful
# Podman maps no ids: host root is uid 0 inside too.

IMAGE_TEST_USER=${IMAGE_TEST_USER:-deskd-image-test}
MODE=

# Makes the rootless user (once; kept for the next run) with subordinate ids and a runtime
# folder. Without systemd-logind nobody makes /run/user/UID, which Podman wants.
mode_rootless_user() {
  if ! id "$IMAGE_TEST_USER" >/dev/null 2>&1; then
    useradd --create-home --shell /usr/sbin/nologin \
      --comment "deskd image test (rootless podman)" "$IMAGE_TEST_USER"
  fi
  # useradd takes ranges from login.defs; an older user may have none.
  if ! grep -q "^$IMAGE_TEST_USER:" /etc/subuid; then usermod --add-subuids 200000-265535 "$IMAGE_TEST_USER"; fi
  if ! grep -q "^$IMAGE_TEST_USER:" /etc/subgid; then usermod --add-subgids 200000-265535 "$IMAGE_TEST_USER"; fi
  MODE_UID=$(id -u "$IMAGE_TEST_USER")
  MODE_HOME=$(getent passwd "$IMAGE_TEST_USER" | cut -d: -f6)
  MODE_RUNTIME=/run/user/$MODE_UID
  install -d -o "$IMAGE_TEST_USER" -g "$IMAGE_TEST_USER" -m 0700 "$MODE_RUNTIME"
}

mode_use() {
  MODE=$1
  case $MODE in
    rootful) MODE_UID=0 ;;
    rootless) mode_rootless_user ;;
    *) echo "podman_modes: unknown mode '$MODE'" >&2; return 2 ;;
  esac
}

# as_mode [VAR=VALUE...] CMD...: CMD as the mode's user, with a login-like environment
# (the rootless user's Podman finds its storage from HOME and XDG_RUNTIME_DIR).
as_mode() {
  if [ "$MODE" = rootful ]; then
    env "$@"
  else
    runuser -u "$IMAGE_TEST_USER" -- env -C "$MODE_HOME" HOME="$MODE_HOME" USER="$IMAGE_TEST_USER" \
      XDG_RUNTIME_DIR="$MODE_RUNTIME" PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
  fi
}

pm() { as_mode podman "$@"; }

ctl_in_mode() {
  if [ "$MODE" = rootful ]; then "$@"; else pm unshare "$@"; fi
}

vol_cat() {
  local mountpoint
  mountpoint=$(pm volume inspect --format '{{.Mountpoint}}' "$1") || return
  ctl_in_mode cat -- "$mountpoint/$2"
}

# mode_give PATH: the mode's user owns PATH (a folder it shares with a container).
mode_give() {
  if [ "$MODE" = rootless ]; then chown -R "$IMAGE_TEST_USER:" "$1"; fi
}

# Starts a listener for sd_notify datagrams at SOCKET (as the mode's user, who must be
# able to send to it) that appends each message to LOG; prints its pid. It stops by
# itself after an hour in case nobody kills it.
notify_listener_start() {
  local socket=$1 log=$2 pidfile=$1.pid
  as_mode python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(3600)
with open(sys.argv[3], "w") as p: p.write(str(os.getpid()))
with open(sys.argv[2], "a") as out:
    while True:
        out.write(s.recv(4096).decode(errors="replace").replace("\n", " ") + "\n")
        out.flush()
' "$socket" "$log" "$pidfile" </dev/null >/dev/null 2>&1 &
  local waited=0
  while [ ! -s "$pidfile" ] && [ $waited -lt 50 ]; do sleep 0.1; waited=$((waited + 1)); done
  cat "$pidfile"
}
