#!/usr/bin/env bash
# The Kubernetes manifests (images/kubernetes/), checked offline: no cluster, no kubectl.
# validate.mjs renders the Kustomize base, validates every document against the
# Kubernetes API's OpenAPI schema (kubernetes-models, generated from the official schema;
# fields the schema does not have are refused too), checks what deskd's pods must hold
# (hostUsers: false, procMount: Unmasked, the image's Localhost seccomp profile, no
# privilege, probes and a preStop that ask deskd's socket, a grace period that covers the
# turns'), parses every shard's deskd.toml, and checks that the DaemonSet puts the image's
# /usr/share/deskd/seccomp.json on the nodes and that the image ships images/seccomp.json
# there, in a form every container runtime reads alike.
#
# The validator comes from npm, installed once into /var/tmp/deskd-k8s-validate/<hash of
# the pinned versions> (DESKD_K8S_VALIDATE_CACHE moves it) and reused after that; Node.js
# from Debian when it is missing. Exits non-zero on any failure.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)

# kubernetes-models 5.1.0 holds the OpenAPI schema of Kubernetes 1.36.0 (validate.mjs checks
# that it knows hostUsers and procMount). It asks for Node.js 22 but runs on this machine's
# 20 (it is plain ES modules). Bump versions here; the cache key follows.
packages=(kubernetes-models@5.1.0 yaml@2.9.1 smol-toml@1.9.1)

log() { echo "validate.sh: $*" >&2; }

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  [ "$(id -u)" -eq 0 ] || { log "node and npm are missing: apt-get install nodejs npm"; exit 1; }
  log "installing nodejs and npm from Debian"
  apt-get install -y -q nodejs npm >/dev/null
fi

key=$(printf '%s\n' "recipe=1" "${packages[@]}" | sha256sum | cut -c1-12)
cache=${DESKD_K8S_VALIDATE_CACHE:-/var/tmp/deskd-k8s-validate}/$key
if [ ! -f "$cache/.installed" ]; then
  mkdir -p "$(dirname "$cache")"
  staging=$(mktemp -d "$cache.XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  log "installing ${packages[*]} into $cache"
  # --ignore-scripts: nothing from the registry runs here but the validator's own code.
  npm install --prefix "$staging" --no-audit --no-fund --ignore-scripts --loglevel=error \
    "${packages[@]}" >&2
  touch "$staging/.installed"
  # Atomic: a run beside this one sees the whole cache or none (a folder left without
  # .installed is not one of ours to keep).
  [ -f "$cache/.installed" ] || rm -rf "$cache"
  mv -T "$staging" "$cache" 2>/dev/null || rm -rf "$staging"
  trap - EXIT
fi

exec node "$here/validate.mjs" "$root" "$cache/node_modules"
