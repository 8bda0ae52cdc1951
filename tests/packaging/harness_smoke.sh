#!/usr/bin/env bash
# Smoke test of booted_debian.sh: boots the cached Debian 12 root under systemd-nspawn,
# checks systemd is up, installs a dummy .deb whose Depends must come from the mirror,
# checks the namespaces deskd needs can be made inside, and powers off. Run as root.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/booted_debian.sh"

name=smoke-$$
step() { echo "== $*"; }
t0=$SECONDS

step "pristine root"
root=$(booted_debian_root)
echo "$root ready after $((SECONDS - t0)) s"

step "boot $name"
t=$SECONDS
booted_debian_start "$name"
echo "booted (with apt-get update) in $((SECONDS - t)) s"

state=$(booted_debian_run "$name" systemctl is-system-running || true)
echo "is-system-running: $state"
case $state in running|degraded) ;; *) echo "FAIL: unexpected state" >&2; exit 1 ;; esac
[ "$(booted_debian_run "$name" cat /run/systemd/container)" = systemd-nspawn ]

step "dummy package with Depends from the mirror"
work=$(mktemp -d)
trap 'booted_debian_cleanup; rm -rf "$work"' EXIT
pkg=$work/deskd-harness-dummy
mkdir -p "$pkg/DEBIAN" "$pkg/usr/share/deskd-harness-dummy"
cat > "$pkg/DEBIAN/control" <<'EOF'
Package: deskd-harness-dummy
Version: 1.0
Architecture: all
Maintainer: deskd tests <deskd@example.invalid>
Depends: libseccomp2, systemd-timesyncd
Description: dummy package for the deskd packaging harness smoke test
EOF
echo ok > "$pkg/usr/share/deskd-harness-dummy/marker"
dpkg-deb --root-owner-group --build "$pkg" "$work/deskd-harness-dummy_1.0_all.deb" >/dev/null
booted_debian_copy_in "$name" "$work/deskd-harness-dummy_1.0_all.deb" /tmp/
# systemd-timesyncd is not in the root: installing it proves Depends resolve from the mirror.
if booted_debian_run "$name" dpkg-query -W -f='${Status}' systemd-timesyncd 2>/dev/null |
     grep -q 'install ok installed'; then
  echo "FAIL: systemd-timesyncd is already in the root; pick another Depends" >&2; exit 1
fi
booted_debian_run "$name" sh -c 'cd /tmp && apt-get install -y -q ./deskd-harness-dummy_1.0_all.deb' |
  tail -n 3
booted_debian_run "$name" dpkg-query -W deskd-harness-dummy systemd-timesyncd
[ "$(booted_debian_run "$name" cat /usr/share/deskd-harness-dummy/marker)" = ok ]

step "systemd-analyze security"
booted_debian_run "$name" systemd-analyze security systemd-timesyncd.service --no-pager | tail -n 1

step "namespaces as a service inside (what deskd will create)"
booted_debian_run "$name" systemd-run --wait --pipe --quiet \
  unshare --user --map-root-user --mount --pid --net --ipc --uts --cgroup --fork true
echo "user+mount+pid+net+ipc+uts+cgroup namespaces: ok"

step "purge"
booted_debian_run "$name" apt-get purge -y -q deskd-harness-dummy | tail -n 1
if booted_debian_run "$name" test -e /usr/share/deskd-harness-dummy; then
  echo "FAIL: purge left /usr/share/deskd-harness-dummy" >&2; exit 1
fi

step "stop"
t=$SECONDS
booted_debian_stop "$name"
echo "stopped in $((SECONDS - t)) s"
[ ! -e "$BOOTED_DEBIAN_DIR/run/$name" ]
echo "PASS harness_smoke ($((SECONDS - t0)) s)"
