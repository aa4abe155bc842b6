#!/usr/bin/env bash
# make images: build the images minik8s runs, locally, with nothing pulled (the build machines
# have no registry). Go workloads from workloads/cmd/<name>, and the example operator from
# test/operator/cmd/echo-operator (a module of its own), become static binaries on FROM scratch; busybox comes from Debian's busybox-static package; debian is a Debian base made with
# debootstrap from this machine's apt sources (read when it runs) and docker import; nginx is
# Debian's nginx installed on that base (the Ingress controller's pods); python-runtime is
# Debian's python3 with common python3-* packages and the function runtime on that base (the
# base of every serverless function image); prometheus is upstream Prometheus built from the
# Go module proxy on FROM scratch, node-exporter Debian's node exporter on the base and
# dashboard our dashboard's static binary on FROM scratch with Chart.js from Debian (the
# monitoring stack). Each image is tagged
# :VERSION (debian: the Debian release, e.g. :12) and :latest in the Docker engine that `docker`
# talks to (DOCKER_HOST is honoured).
#
#   scripts/images.sh                 build every image whose inputs changed
#   scripts/images.sh --if-missing    build only images that are not there (make up uses this)
#   scripts/images.sh echo busybox    only these
#   scripts/images.sh --list          print the image references, e.g. for docker save
#   MINIK8S_MONITORING=0 scripts/images.sh   all but the monitoring stack's (prometheus, node-exporter, dashboard)
#
# Idempotent: an image carries a hash of its inputs (binary or .deb, Dockerfile, version) in the
# label io.minik8s.build.inputs; when the hash matches, docker build is not run at all.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

VERSION=1.0
IMAGES=(pause echo load fileserver incluster echo-operator busybox debian nginx python-runtime prometheus node-exporter dashboard)
# Upstream Prometheus, as the Go module proxy serves it (module v0.3XX.Y is Prometheus 3.XX.Y),
# built with only the service discovery the monitoring stack uses.
PROMETHEUS_MODULE=${PROMETHEUS_MODULE:-github.com/prometheus/prometheus}
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}
PROMETHEUS_TAGS=remove_all_sd,enable_kubernetes_sd
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
# MINIK8S_MONITORING=0 (make up's switch for the monitoring stack) leaves its images out of
# the default list; named images are always built.
if [ ${#wanted[@]} -eq 0 ]; then
  for a in "${IMAGES[@]}"; do
    if [ "${MINIK8S_MONITORING:-1}" = 0 ] && [[ " ${MONITORING_IMAGES[*]} " == *" $a "* ]]; then continue; fi
    wanted+=("$a")
  done
fi

# The Debian base is tagged with the host's Debian release, whose suite it is made from.
DEBIAN_SUITE='' DEBIAN_TAG=''
if [ -r /etc/os-release ]; then
  # shellcheck disable=SC1091
  DEBIAN_SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  # shellcheck disable=SC1091
  DEBIAN_TAG=$(. /etc/os-release && echo "${VERSION_ID:-}")
fi
DEBIAN_TAG=${DEBIAN_TAG:-$VERSION}

# tag_of NAME is the version tag of an image.
tag_of() { if [ "$1" = debian ]; then echo "$DEBIAN_TAG"; else echo "$VERSION"; fi; }

if [ -n "$list" ]; then
  for n in "${wanted[@]}"; do printf 'minik8s/%s:%s\n' "$n" "$(tag_of "$n")"; done
  exit 0
fi

docker info >/dev/null 2>&1 || die "docker does not answer (is it running? make up starts it)"

WORK=$(mktemp -d)
trap 'rm -rf -- "$WORK"' EXIT

present() { docker image inspect "minik8s/$1:$(tag_of "$1")" "minik8s/$1:latest" >/dev/null 2>&1; }

built_inputs() {
  docker image inspect -f "{{index .Config.Labels \"$INPUTS_LABEL\"}}" "minik8s/$1:$(tag_of "$1")" 2>/dev/null || true
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

# build_go NAME [MODULE] builds MODULE/cmd/NAME (MODULE defaults to workloads) into the image
# minik8s/NAME.
build_go() {
  local name=$1 module=${2:-workloads} ctx=$WORK/$1
  command -v go >/dev/null || die "go is not on PATH"
  mkdir -p "$ctx"
  # GOWORK=off: the module builds alone, whatever the rest of the workspace is doing.
  # -buildvcs=false keeps the commit out of the binary, so the same source gives the same bytes.
  (cd "$ROOT/$module" && GOWORK=off CGO_ENABLED=0 go build -trimpath -buildvcs=false \
    -ldflags='-s -w' -o "$ctx/$name" "./cmd/$name") || die "go build $module/cmd/$name failed"
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

# debian_mirror SUITE prints the URI this machine's apt sources fetch SUITE/main from (as apt
# itself resolved them), refreshing the package lists once when apt has none.
debian_mirror() {
  local suite=$1 uri
  uri=$(apt-cache policy 2>/dev/null | awk -v s="$suite/main" '$3 == s && $2 ~ /^https?:/ { print $2; exit }')
  if [ -z "$uri" ] && [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
    uri=$(apt-cache policy 2>/dev/null | awk -v s="$suite/main" '$3 == s && $2 ~ /^https?:/ { print $2; exit }')
  fi
  echo "$uri"
}

# ensure_debootstrap installs Debian's debootstrap when it is missing, as make up installs the
# host's packages.
ensure_debootstrap() {
  command -v debootstrap >/dev/null 2>&1 && return
  [ "$(id -u)" -eq 0 ] || die "the debian image needs debootstrap; run as root or apt-get install debootstrap"
  log "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap </dev/null >"$WORK/apt.log" 2>&1 ||
    { DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap </dev/null >"$WORK/apt.log" 2>&1; } ||
    { cat "$WORK/apt.log" >&2; die "apt-get install debootstrap failed"; }
}

# build_debian makes minik8s/debian:<release>: a minbase debootstrap of the host's suite from
# the host's mirror, given the host's apt sources (so images built on it get the same mirror
# and security updates), imported with docker import. Nothing names a mirror in the repository.
build_debian() {
  local ref rootfs mirror inputs f
  [ -n "$DEBIAN_SUITE" ] || die "the debian image needs a Debian host (/etc/os-release has no VERSION_CODENAME)"
  ref=minik8s/debian:$DEBIAN_TAG
  mirror=$(debian_mirror "$DEBIAN_SUITE")
  [ -n "$mirror" ] || die "apt's sources have no $DEBIAN_SUITE/main to debootstrap from"
  # The recipe below is part of the inputs: change it, and bump this line.
  printf 'debian recipe 2\nsuite %s\nmirror %s\n' "$DEBIAN_SUITE" "$mirror" >"$WORK/debian.id"
  inputs=$(hash_inputs "$WORK/debian.id")
  if [ "$(built_inputs debian)" = "$inputs" ]; then
    docker tag "$ref" minik8s/debian:latest
    log "image $ref up to date"
    return
  fi
  ensure_debootstrap
  [ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
  rootfs=$WORK/debian-rootfs
  log "image $ref: debootstrap --variant=minbase $DEBIAN_SUITE (a few minutes)"
  if ! debootstrap --variant=minbase "$DEBIAN_SUITE" "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1; then
    tail -n 30 "$WORK/debootstrap.log" >&2
    die "debootstrap of $DEBIAN_SUITE failed"
  fi
  # The host's sources (deb lines and deb822 files; not files it disabled).
  : >"$rootfs/etc/apt/sources.list"
  [ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$rootfs/etc/apt/sources.list"
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && cp "$f" "$rootfs/etc/apt/sources.list.d/"
  done
  grep -qsE '^(deb |URIs:)' "$rootfs/etc/apt/sources.list" "$rootfs"/etc/apt/sources.list.d/* ||
    printf 'deb %s %s main\n' "$mirror" "$DEBIAN_SUITE" >"$rootfs/etc/apt/sources.list"
  # No service starts from a package's maintainer scripts inside a container build, and apt
  # keeps neither lists nor downloaded packages in the image.
  printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
  chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$rootfs/etc/apt/apt.conf.d/90minik8s"
  # Documentation, manual pages and translations stay out (copyright files stay), now and in
  # packages installed on top.
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' \
    'path-include /usr/share/locale/locale.alias' >"$rootfs/etc/dpkg/dpkg.cfg.d/90minik8s-nodoc"
  find "$rootfs/usr/share/doc" -type f ! -name copyright -delete
  rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
  find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* "$rootfs"/tmp/*
  log "image $ref: docker import"
  tar --numeric-owner -C "$rootfs" -c . | docker import \
    --change "LABEL $INPUTS_LABEL=$inputs" \
    --change 'LABEL org.opencontainers.image.title=minik8s/debian' \
    --change "LABEL org.opencontainers.image.description=\"Debian $DEBIAN_SUITE minbase made with debootstrap\"" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' - "$ref" >/dev/null || die "docker import of $ref failed"
  docker tag "$ref" minik8s/debian:latest
  rm -rf "$rootfs"
  log "image $ref built"
}

# build_prometheus compiles Prometheus once per version into the user's cache (go install from
# the Go module proxy: several minutes and about 3 GB of memory on two cores) and puts the
# static binary on FROM scratch.
build_prometheus() {
  local ctx=$WORK/prometheus cache bin release recipe
  command -v go >/dev/null || die "go is not on PATH"
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/minik8s/prometheus-$PROMETHEUS_VERSION
  bin=$cache/prometheus
  # Module v0.3XX.Y is release 3.XX.Y, which `prometheus --version` prints as promu would.
  release=${PROMETHEUS_VERSION#v0.}
  release=${release:0:1}.$((10#${release:1:2})).${release#*.}
  recipe="tags=$PROMETHEUS_TAGS version=$release"
  if [ ! -x "$bin" ] || [ "$(cat "$cache/recipe" 2>/dev/null)" != "$recipe" ]; then
    log "building Prometheus $release ($PROMETHEUS_VERSION) from the Go module proxy (once; several minutes)"
    mkdir -p "$cache"
    rm -f "$bin"
    # Outside the workspace (GOWORK=off, go install pkg@version): Prometheus' own go.mod rules.
    (cd "$cache" && GOWORK=off GOFLAGS= GOBIN="$cache" CGO_ENABLED=0 go install -trimpath -buildvcs=false \
      -ldflags="-s -w -X github.com/prometheus/common/version.Version=$release" -tags "$PROMETHEUS_TAGS" \
      "$PROMETHEUS_MODULE/cmd/prometheus@$PROMETHEUS_VERSION") || die "go install of Prometheus $PROMETHEUS_VERSION failed"
    printf '%s' "$recipe" >"$cache/recipe"
  fi
  mkdir -p "$ctx"
  cp "$bin" "$ctx/prometheus"
  cp "$ROOT/images/prometheus/Dockerfile" "$ctx/Dockerfile"
  docker_build prometheus "$ctx" "$(hash_inputs "$ctx/prometheus" "$ctx/Dockerfile")" \
    --build-arg "PROMETHEUS_VERSION=$release"
}

# build_on_debian NAME [FILE...] builds images/NAME/Dockerfile (and FILEs next to it) on the
# Debian base, whose image id is an input: a new base rebuilds it.
build_on_debian() {
  local name=$1 ctx=$WORK/$1 base=minik8s/debian:$DEBIAN_TAG base_id f files=()
  shift
  present debian || build_debian
  base_id=$(docker image inspect -f '{{.Id}}' "$base") || die "no base image $base"
  mkdir -p "$ctx"
  for f in Dockerfile "$@"; do
    cp "$ROOT/images/$name/$f" "$ctx/"
    files+=("$ctx/$f")
  done
  printf 'base %s\n' "$base_id" >"$WORK/$name.base-id"
  docker_build "$name" "$ctx" "$(hash_inputs "$WORK/$name.base-id" "${files[@]}")" --build-arg "BASE=$base"
}

# build_dashboard builds dashboard/cmd/dashboard into a static binary and images/dashboard, which
# takes Chart.js from Debian's libjs-chart.js on the Debian base (whose id is an input) and
# puts both on FROM scratch.
build_dashboard() {
  local ctx=$WORK/dashboard base=minik8s/debian:$DEBIAN_TAG base_id
  command -v go >/dev/null || die "go is not on PATH"
  present debian || build_debian
  base_id=$(docker image inspect -f '{{.Id}}' "$base") || die "no base image $base"
  mkdir -p "$ctx"
  (cd "$ROOT/dashboard" && GOWORK=off CGO_ENABLED=0 go build -trimpath -buildvcs=false \
    -ldflags='-s -w' -o "$ctx/dashboard" ./cmd/dashboard) || die "go build dashboard/cmd/dashboard failed"
  cp "$ROOT/images/dashboard/Dockerfile" "$ctx/Dockerfile"
  printf 'base %s\n' "$base_id" >"$WORK/dashboard.base-id"
  docker_build dashboard "$ctx" "$(hash_inputs "$WORK/dashboard.base-id" "$ctx/dashboard" "$ctx/Dockerfile")" \
    --build-arg "BASE=$base"
}

todo=() have=()
for n in "${wanted[@]}"; do
  if [ -n "$if_missing" ] && present "$n"; then have+=("$n"); else todo+=("$n"); fi
done
[ ${#have[@]} -eq 0 ] || log "images present: ${have[*]} (minik8s/<name>:$VERSION)"
for n in "${todo[@]}"; do
  case $n in
    busybox) build_busybox ;;
    debian) build_debian ;;
    # Debian's nginx (the Ingress controller's pods), Debian's python3 with common python3-*
    # packages and the function runtime, Debian's node exporter.
    nginx) build_on_debian nginx nginx.conf ;;
    python-runtime) build_on_debian python-runtime runtime.py start.py ;;
    node-exporter) build_on_debian node-exporter ;;
    prometheus) build_prometheus ;;
    dashboard) build_dashboard ;;
    echo-operator) build_go echo-operator test/operator ;;
    *) build_go "$n" ;;
  esac
done
