#!/usr/bin/env bash
# make compose: run docker-compose.yml on this machine with nothing pulled. Compose cannot make
# the Debian base its images are built FROM (debootstrap and docker import), nor the pause image
# pods need, so this builds those first (scripts/images.sh, cached), then runs compose with
# what the builds need from this machine:
#   GOPROXY                  `go env GOPROXY`: where build/Dockerfile fetches the Go toolchain
#                            and modules
#   MINIK8S_EXTRA_CA_CERTS   the certificates this machine trusts beyond Debian's
#                            ca-certificates (a TLS-intercepting proxy's), trusted by the Go
#                            build stage only
#
#   scripts/compose.sh up -d --build    (make compose)
#   scripts/compose.sh down [-v]        (make compose-down) compose down, and the pods' containers,
#                                       which the kubelet leaves running; -v: also the volumes
#                                       and the state directories (MINIK8S_COMPOSE_HOME, _DATA)
#   scripts/compose.sh ps | logs | ...  any other docker compose command
#
# DOCKER_HOST is honoured: images are built in, and the stack run by, the engine it names.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

compose_cmd() {
  if docker compose version >/dev/null 2>&1; then
    echo "docker compose"
  elif command -v docker-compose >/dev/null 2>&1; then
    echo docker-compose
  else
    die "neither 'docker compose' nor docker-compose is installed"
  fi
}

# extra_ca_certs prints the PEM blocks of the system bundle that no file of Debian's
# ca-certificates (Mozilla's list) holds.
extra_ca_certs() {
  local bundle=/etc/ssl/certs/ca-certificates.crt mozilla=(/usr/share/ca-certificates/mozilla/*.crt)
  [ -r "$bundle" ] && [ -e "${mozilla[0]}" ] || return 0
  awk -v bundle="$bundle" '
    FNR == 1 { inbundle = (FILENAME == bundle) }
    /-----BEGIN CERTIFICATE-----/ { body = ""; pem = $0 "\n"; next }
    /-----END CERTIFICATE-----/ {
      pem = pem $0 "\n"
      if (!inbundle) known[body] = 1
      else if (!(body in known)) printf "%s", pem
      next
    }
    { sub(/\r$/, ""); body = body $0; pem = pem $0 "\n" }' "${mozilla[@]}" "$bundle"
}

[ $# -gt 0 ] || die "usage: $0 COMPOSE-COMMAND [ARGS...] (e.g. up -d --build)"
cmd=$(compose_cmd)
case $1 in
  up | build | create | run)
    "$ROOT/scripts/images.sh" debian pause
    if [ -z "${GOPROXY:-}" ] && command -v go >/dev/null 2>&1; then GOPROXY=$(go env GOPROXY); fi
    export GOPROXY
    MINIK8S_EXTRA_CA_CERTS=${MINIK8S_EXTRA_CA_CERTS-$(extra_ca_certs)}
    export MINIK8S_EXTRA_CA_CERTS
    ;;
esac
cd "$ROOT"
if [ "$1" != down ]; then
  # shellcheck disable=SC2086 # "docker compose" is two words
  exec $cmd -f docker-compose.yml "$@"
fi

# down: compose stops and removes its containers (and with -v its volumes); the pods'
# containers are the kubelet's, which it leaves running when it stops (a restarted kubelet
# adopts them), so they are removed here; with -v the state directories go too.
volumes=
for a in "$@"; do
  case $a in -v | --volumes) volumes=1 ;; esac
done
# shellcheck disable=SC2086
$cmd -f docker-compose.yml "$@"
node=${MINIK8S_NODE_NAME:-minik8s-node}
ids=$(docker ps -aq --filter "label=minik8s.io/node=$node")
if [ -n "$ids" ]; then
  log "removing the pods' containers of node $node"
  # shellcheck disable=SC2086 # one id per word
  docker rm -f $ids >/dev/null
fi
if [ -n "$volumes" ]; then
  for d in "${MINIK8S_COMPOSE_HOME:-.minik8s-compose}" "${MINIK8S_COMPOSE_DATA:-/var/lib/minik8s-compose}"; do
    case $d in /*) ;; *) d=$ROOT/$d ;; esac
    d=$(realpath -m "$d")
    [ "$d" != / ] && [ "$d" != "$ROOT" ] || die "refusing to delete $d"
    if [ -e "$d" ]; then
      log "deleting $d"
      rm -rf -- "$d"
    fi
  done
fi
