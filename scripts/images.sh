#!/usr/bin/env bash
# make images: build the images minik8s runs, locally, with nothing pulled (the build machines
# have no registry). Go workloads from workloads/cmd/<name> become static binaries on FROM
# scratch; busybox comes from Debian's busybox-static package. Each image is tagged :VERSION and
# :latest in the Docker engine that `docker` talks to (DOCKER_HOST is honoured).
#
#   scripts/images.sh                 build every image whose inputs changed
#   scripts/images.sh --if-missing    build only images that are not there (make up uses this)
#   scripts/images.sh echo busybox    only these
#   scripts/images.sh --list          print the image references, e.g. for docker save
#
# Idempotent: an image carries a hash of its inputs (binary or .deb, Dockerfile, version) in the
# label io.minik8s.build.inputs; when the hash matches, docker build is not run at all.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

VERSION=1.0
IMAGES=(pause echo load fileserver busybox)
INPUTS_LABEL=io.minik8s.build.inputs

usage() { die "usage: $0 [--if-missing] [--list] [$(IFS='|'; echo "${IMAGES[*]}")...]"; }

if_missing= list= wanted=()
for a in "$@"; do
  case $a in
    --if-missing) if_missing=1 ;;
    --list) list=1 ;;
    -h | --help) usage ;;
    -*) usage ;;
    *)
      [[ " ${IMAGES[*]} " == *" $a "* ]] || die "unknown image $a (have: ${IMAGES[*]})"
      wanted+=("$a")
      ;;
  esac
done
[ ${#wanted[@]} -gt 0 ] || wanted=("${IMAGES[@]}")

if [ -n "$list" ]; then
  for n in "${wanted[@]}"; do printf 'minik8s/%s:%s\n' "$n" "$VERSION"; done
  exit 0
fi

docker info >/dev/null 2>&1 || die "docker does not answer (is it running? make up starts it)"

WORK=$(mktemp -d)
trap 'rm -rf -- "$WORK"' EXIT

present() { docker image inspect "minik8s/$1:$VERSION" "minik8s/$1:latest" >/dev/null 2>&1; }

built_inputs() {
  docker image inspect -f "{{index .Config.Labels \"$INPUTS_LABEL\"}}" "minik8s/$1:$VERSION" 2>/dev/null || true
}

# hash_inputs FILE... prints one sha256 over the files' contents and the version.
hash_inputs() {
  { printf 'version %s\n' "$VERSION"; sha256sum "$@" | awk '{ print $1 }'; } | sha256sum | awk '{ print $1 }'
}

# docker_build NAME CONTEXT INPUTS [--build-arg K=V...] runs docker build unless the image was
# already built from the same inputs; its output goes to a file shown only on failure.
docker_build() {
  local name=$1 ctx=$2 inputs=$3 ref=minik8s/$1:$VERSION out id
  shift 3
  if [ "$(built_inputs "$name")" = "$inputs" ]; then
    docker tag "$ref" "minik8s/$name:latest"
    log "image $ref up to date"
    return
  fi
  # Fixed modification times: COPY keeps them, and they would otherwise differ per build.
  find "$ctx" -exec touch -h -d @0 {} +
  out=$WORK/$name.build.log
  log "image $ref building"
  if ! docker build --label "$INPUTS_LABEL=$inputs" --build-arg "VERSION=$VERSION" "$@" \
    -t "$ref" -t "minik8s/$name:latest" "$ctx" >"$out" 2>&1; then
    cat "$out" >&2
    die "docker build of $ref failed"
  fi
  id=$(docker image inspect -f '{{.Id}}' "$ref")
  log "image $ref built (${id:7:12})"
}

build_go() {
  local name=$1 ctx=$WORK/$1
  command -v go >/dev/null || die "go is not on PATH"
  mkdir -p "$ctx"
  # GOWORK=off: the workloads module builds alone, whatever the rest of the workspace is doing.
  # -buildvcs=false keeps the commit out of the binary, so the same source gives the same bytes.
  (cd "$ROOT/workloads" && GOWORK=off CGO_ENABLED=0 go build -trimpath -buildvcs=false \
    -ldflags='-s -w' -o "$ctx/$name" "./cmd/$name") || die "go build workloads/cmd/$name failed"
  cp "$ROOT/images/$name/Dockerfile" "$ctx/Dockerfile"
  docker_build "$name" "$ctx" "$(hash_inputs "$ctx/$name" "$ctx/Dockerfile")"
}

candidate() { apt-cache policy busybox-static 2>/dev/null | awk '/Candidate:/ { print $2 }'; }

build_busybox() {
  local ctx=$WORK/busybox dl=$WORK/deb version sha inputs
  command -v apt-get >/dev/null || die "busybox needs apt-get (Debian or Ubuntu)"
  version=$(candidate)
  if [ -z "$version" ] || [ "$version" = "(none)" ]; then
    [ "$(id -u)" -eq 0 ] || die "apt has no busybox-static; run 'apt-get update' as root"
    log "apt-get update (no busybox-static in the package lists)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
    version=$(candidate)
    [ -n "$version" ] && [ "$version" != "(none)" ] || die "no busybox-static package in apt's sources"
  fi
  # The package's hash from the signed lists stands for the binary, so an unchanged image is
  # recognised without downloading anything.
  sha=$(apt-cache show "busybox-static=$version" | awk '/^SHA256:/ { print $2; exit }')
  mkdir -p "$ctx" "$dl"
  cp "$ROOT/images/busybox/Dockerfile" "$ctx/Dockerfile"
  printf 'busybox-static %s %s\n' "$version" "$sha" >"$WORK/busybox.deb-id"
  inputs=$(hash_inputs "$WORK/busybox.deb-id" "$ctx/Dockerfile")
  if [ "$(built_inputs busybox)" != "$inputs" ]; then
    log "downloading busybox-static $version"
    # apt drops to the _apt user for downloads; it must be able to write here.
    chmod 0755 "$WORK" "$dl"
    (cd "$dl" && apt-get download -q "busybox-static=$version" >"$WORK/apt.log" 2>&1) ||
      { cat "$WORK/apt.log" >&2; die "apt-get download busybox-static=$version failed"; }
    dpkg-deb -x "$dl"/busybox-static_*.deb "$dl/root"
    cp "$dl/root/bin/busybox" "$ctx/busybox"
  fi
  docker_build busybox "$ctx" "$inputs" --build-arg "DEB_VERSION=$version"
}

todo=() have=()
for n in "${wanted[@]}"; do
  if [ -n "$if_missing" ] && present "$n"; then have+=("$n"); else todo+=("$n"); fi
done
[ ${#have[@]} -eq 0 ] || log "images present: ${have[*]} (minik8s/<name>:$VERSION)"
for n in "${todo[@]}"; do
  case $n in
    busybox) build_busybox ;;
    *) build_go "$n" ;;
  esac
done
