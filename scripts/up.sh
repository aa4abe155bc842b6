#!/usr/bin/env bash
# make up: prepare this host (Debian 12, root), build the binaries, start the control plane
# in the background and wait until it serves. Safe to run again: it skips what is done.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 && SUDO=sudo
fi

# ---- host packages ---------------------------------------------------------------------
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

ensure_packages() {
  local missing=() p
  local want=(rabbitmq-server redis-server containernetworking-plugins iptables curl etcd-server python3-kubernetes)
  # Headless Chromium loads the dashboard's pages in the end-to-end tests.
  if [ "${MINIK8S_MONITORING:-1}" != 0 ]; then want+=(chromium); fi
  for p in "${want[@]}"; do
    installed "$p" || missing+=("$p")
  done
  if ! docker info >/dev/null 2>&1 && ! installed docker.io && ! command -v dockerd >/dev/null 2>&1; then
    missing+=(docker.io)
  fi
  if [ ${#missing[@]} -eq 0 ]; then
    log "host packages present"
    return
  fi
  [ "$(id -u)" -eq 0 ] || [ -n "$SUDO" ] || die "missing packages (${missing[*]}); run as root"
  log "installing ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
}

# ---- host services ---------------------------------------------------------------------
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

ensure_docker() {
  if docker info >/dev/null 2>&1; then log "docker running"; return; fi
  log "starting docker"
  $SUDO service docker start >/dev/null 2>&1 || true
  wait_for "docker" 60 eval 'docker info >/dev/null 2>&1' || die "docker does not answer; see 'service docker status'"
}

ensure_rabbitmq() {
  # The management plugin is enabled offline (it only edits enabled_plugins), so a first start
  # already serves the UI, and a running broker picks it up on the same command.
  if ! grep -qs rabbitmq_management /etc/rabbitmq/enabled_plugins; then
    log "enabling rabbitmq_management"
    $SUDO rabbitmq-plugins enable --quiet rabbitmq_management >/dev/null 2>&1 ||
      $SUDO rabbitmq-plugins enable --offline --quiet rabbitmq_management >/dev/null
  fi
  # Erlang schedulers spin while waiting for work by default; on a small shared host that
  # burns CPU the control plane needs (about 2x RabbitMQ's CPU per message in make bench).
  # On two cores or fewer the broker also gets a single scheduler: the control plane keeps
  # both cores busy, and work handed between two Erlang schedulers cost RabbitMQ about 40 %
  # more CPU per message in the scheduling benchmark (docs/benchmarks.md); one scheduler is
  # several times what the broker needs here.
  local env=/etc/rabbitmq/rabbitmq-env.conf restart=
  local erl_args="+sbwt none +sbwtdcpu none +sbwtdio none"
  if [ "$(nproc)" -le 2 ]; then erl_args="$erl_args +S 1:1"; fi
  local line="SERVER_ADDITIONAL_ERL_ARGS=\"$erl_args\""
  if ! grep -qsxF "$line" "$env"; then
    log "configuring rabbitmq's Erlang schedulers: $erl_args ($env)"
    $SUDO touch "$env"
    $SUDO sed -i '/^SERVER_ADDITIONAL_ERL_ARGS=/d' "$env"
    echo "$line" | $SUDO tee -a "$env" >/dev/null
    restart=1
  fi
  if port_open 5672 && [ -n "$restart" ]; then
    log "restarting rabbitmq to apply its new settings"
    $SUDO service rabbitmq-server restart >/dev/null || die "service rabbitmq-server restart failed; see /var/log/rabbitmq/"
  elif port_open 5672; then
    log "rabbitmq running"
  else
    log "starting rabbitmq"
    $SUDO service rabbitmq-server start >/dev/null || die "service rabbitmq-server start failed; see /var/log/rabbitmq/"
  fi
  wait_for "rabbitmq on :5672" 90 port_open 5672 || die "rabbitmq does not listen on 5672; see /var/log/rabbitmq/"
  wait_for "rabbitmq management on :15672" 60 port_open 15672 || die "rabbitmq management UI does not listen on 15672"
}

redis_up() { [ "$(redis-cli -h 127.0.0.1 ping 2>/dev/null)" = PONG ]; }

ensure_redis() {
  if redis_up; then log "redis running"; return; fi
  log "starting redis"
  $SUDO service redis-server start >/dev/null 2>&1 || $SUDO redis-server --daemonize yes --bind 127.0.0.1 >/dev/null
  wait_for "redis" 30 redis_up || die "redis does not answer PING"
}

# ---- binaries --------------------------------------------------------------------------
build() {
  mkdir -p "$BIN_DIR"
  local b name pkg
  for b in "${BINARIES[@]}"; do
    name=${b%%=*} pkg=${b#*=}
    log "building bin/$name"
    (cd "$ROOT" && go build -o "$BIN_DIR/$name" "$pkg") || die "go build $pkg failed"
  done
}

# ---- images ----------------------------------------------------------------------------
# Pods need the pause image and the examples the workload images; only missing ones are built.
images() { "$ROOT/scripts/images.sh" --if-missing || die "image build failed; see the lines above"; }

host() {
  ensure_packages
  ensure_docker
  ensure_rabbitmq
  ensure_redis
}

# ensure_vhost points AMQP_URL at this cluster's own vhost, creating it (unless AMQP_URL was
# given).
ensure_vhost() {
  if [ -n "$AMQP_URL" ]; then return; fi
  local vhost
  vhost=$(cluster_vhost)
  rabbitmq_api PUT "/api/vhosts/$vhost" || die "cannot create RabbitMQ vhost $vhost through $RABBITMQ_API"
  rabbitmq_api PUT "/api/permissions/$vhost/guest" '{"configure":".*","write":".*","read":".*"}' ||
    die "cannot grant guest the RabbitMQ vhost $vhost"
  AMQP_URL="amqp://guest:guest@127.0.0.1:5672/$vhost"
}

start() {
  if [ -f "$MINIK8S_HOME/cluster/env" ]; then
    die "a multi-node cluster (make cluster) uses $MINIK8S_HOME: make cluster-down first, or another MINIK8S_HOME"
  fi
  mkdir -p "$RUN_DIR" "$LOG_DIR"
  chmod 700 "$MINIK8S_HOME"
  ensure_vhost
  local c
  for c in "${COMPONENTS[@]}"; do
    start_component "$c"
    wait_component "$c"
  done
  local dashboard="none (MINIK8S_MONITORING=0)"
  if [ "${MINIK8S_MONITORING:-1}" != 0 ]; then
    "$ROOT/scripts/monitoring.sh" install
    dashboard=$("$ROOT/scripts/monitoring.sh" url) || dashboard="unknown (scripts/monitoring.sh url)"
  fi
  cat <<MSG
[minik8s] cluster is up (state in $MINIK8S_HOME)
  our kubectl:   bin/kubectl get nodes
  real kubectl:  kubectl --kubeconfig $MINIK8S_HOME/kubeconfig get ns
  RabbitMQ UI:   http://localhost:15672 (guest/guest), this cluster's vhost: ${AMQP_URL##*/}
  Prometheus:    kubectl port-forward -n minik8s-monitoring svc/prometheus 9090 (MINIK8S_MONITORING=0: none)
  dashboard:     $dashboard
  logs:          $LOG_DIR/
  stop:          make down
MSG
}

# Stages run alone help when only one part needs redoing: host, build, images, start; default
# all. prepare is all but start (make cluster starts its own control plane and nodes).
case "${1:-all}" in
  host) host ;;
  build) build ;;
  images) images ;;
  start) start ;;
  prepare) host; build; images ;;
  all) host; build; images; start ;;
  *) die "usage: $0 [all|host|build|images|start|prepare]" ;;
esac
