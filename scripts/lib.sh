# Shared by up.sh, down.sh, cluster.sh and node.sh: paths, the component table and small helpers.
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export MINIK8S_HOME=${MINIK8S_HOME:-$HOME/.minik8s}
BIN_DIR=${BIN_DIR:-$ROOT/bin}
RUN_DIR=$MINIK8S_HOME/run
LOG_DIR=$MINIK8S_HOME/logs

# Binaries built into bin/: name=Go package. Add a line when a component joins.
BINARIES=(
  "apiserver=minik8s.io/apiserver/cmd/apiserver"
  "kubectl=minik8s.io/kubectl/cmd/kubectl"
  "kubelet=minik8s.io/kubelet/cmd/kubelet"
  "controller-manager=minik8s.io/controller/cmd/controller-manager"
  "scheduler=minik8s.io/scheduler/cmd/scheduler"
  "kubeproxy=minik8s.io/kubeproxy/cmd/kubeproxy"
  "serverless=minik8s.io/serverless/cmd/serverless"
)

# The monitoring stack's images (configs/monitoring): MINIK8S_MONITORING=0 leaves them unbuilt
# and off make cluster's nodes.
MONITORING_IMAGES=(prometheus node-exporter dashboard)

# Long-running components `make up` starts, in start order (down stops them in reverse).
# Each needs a function <name>_args printing its flags one per line, and may define
# <name>_ready (return 0 when serving) for up.sh to wait on.
COMPONENTS=(apiserver kubelet kubeproxy scheduler controller-manager serverless)

# Every address, so pods reach the API through the kubernetes Service (at the address of the
# host's default route); kubeconfigs name 127.0.0.1 unless ADVERTISE_ADDRESS says otherwise.
APISERVER_BIND=${APISERVER_BIND:-0.0.0.0}
APISERVER_PORT=${APISERVER_PORT:-6443}
# AMQP_URL, when set, is used as given. Otherwise the cluster gets a RabbitMQ vhost of its own,
# named after the id in $MINIK8S_HOME/cluster-id (see cluster_vhost): after `make reset` the
# new cluster's etcd counts resourceVersions from 1 again, and messages the old cluster left
# in durable queues would make its components ignore the new one's changes as stale.
AMQP_URL=${AMQP_URL:-}
RABBITMQ_API=${RABBITMQ_API:-http://127.0.0.1:15672}
ETCD_SERVERS=${ETCD_SERVERS:-}
# The embedded etcd's ports (when ETCD_SERVERS is empty), on 127.0.0.1; not 2379, so a system
# etcd can run beside it.
ETCD_CLIENT_PORT=${ETCD_CLIENT_PORT:-12379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-12380}
ADVERTISE_ADDRESS=${ADVERTISE_ADDRESS:-}
# The pod network (each node gets a /24 of it from the apiserver) and the Services' range.
CLUSTER_CIDR=${CLUSTER_CIDR:-10.244.0.0/16}
SERVICE_CIDR=${SERVICE_CIDR:-10.96.0.0/12}
# The components' kubeconfigs (the apiserver writes them to $MINIK8S_HOME/kubeconfigs).
KUBECONFIG_DIR=${KUBECONFIG_DIR:-$MINIK8S_HOME/kubeconfigs}
# The one node `make up` runs on this machine.
NODE_NAME=${NODE_NAME:-$(hostname | tr '[:upper:]' '[:lower:]')}
KUBELET_PORT=${KUBELET_PORT:-10250}
# The nodes the apiserver makes identities and kubeconfigs for (comma-separated).
APISERVER_NODES=${APISERVER_NODES:-$NODE_NAME}
# The serverless gateway (host:port) the apiserver proxies functions' and workflows' invoke to;
# it runs on the apiserver's host, under make cluster too.
SERVERLESS_GATEWAY_ADDRESS=${SERVERLESS_GATEWAY_ADDRESS:-127.0.0.1:8090}
# What the audit log ($MINIK8S_HOME/logs/audit.log) records.
AUDIT_POLICY_FILE=${AUDIT_POLICY_FILE:-$ROOT/configs/audit-policy.yaml}

apiserver_args() {
  printf '%s\n' --home "$MINIK8S_HOME" --bind-address "$APISERVER_BIND" \
    --secure-port "$APISERVER_PORT" --etcd-servers "$ETCD_SERVERS" --amqp-url "$AMQP_URL" \
    --nodes "$APISERVER_NODES" --cluster-cidr "$CLUSTER_CIDR" \
    --serverless-gateway-url "http://$SERVERLESS_GATEWAY_ADDRESS" \
    --audit-policy-file "$AUDIT_POLICY_FILE" --audit-log-path "$MINIK8S_HOME/logs/audit.log"
  if [ -z "$ETCD_SERVERS" ]; then
    printf '%s\n' --embedded-etcd-client-url "http://127.0.0.1:$ETCD_CLIENT_PORT" \
      --embedded-etcd-peer-url "http://127.0.0.1:$ETCD_PEER_PORT"
  fi
  if [ -n "$ADVERTISE_ADDRESS" ]; then printf '%s\n' --advertise-address "$ADVERTISE_ADDRESS"; fi
}

# /readyz with the admin token: anonymous access is off. The CA and token file appear only
# once the apiserver has run its first-start setup, so both are read on every attempt.
apiserver_ready() { api_get /readyz >/dev/null 2>&1; }

# api_get PATH prints what the apiserver on this host answers to GET PATH as admin (the
# apiserver always listens on, or for, 127.0.0.1, which is in its certificate); api_call
# METHOD PATH does the same with another method.
api_get() { api_call GET "$1"; }
api_call() {
  local ca=$MINIK8S_HOME/pki/ca.crt tokens=$MINIK8S_HOME/tokens.csv token
  [ -f "$ca" ] && [ -f "$tokens" ] || return 1
  token=$(awk -F, '$2 == "admin" { print $1; exit }' "$tokens")
  curl -fsS --max-time 3 --cacert "$ca" -H "Authorization: Bearer $token" -X "$1" "https://127.0.0.1:$APISERVER_PORT$2"
}

# node_ready NAME: the Node reports Ready=True.
node_ready() {
  local body
  body=$(api_get "/api/v1/nodes/$1" 2>/dev/null) || return 1
  body=$(printf '%s' "$body" | tr -d ' \n')
  [[ $body == *'"type":"Ready","status":"True"'* ]]
}

kubelet_args() {
  printf '%s\n' --node-name "$NODE_NAME" --kubeconfig "$MINIK8S_HOME/kubeconfigs/node-$NODE_NAME.kubeconfig" \
    --root-dir "$MINIK8S_HOME/kubelet" --port "$KUBELET_PORT" --amqp-url "$AMQP_URL"
  kubelet_network_args
  extra_args "$KUBELET_EXTRA_ARGS"
}

# The cluster's DNS address (where each node's kubeproxy serves DNS) and domain, the pod network
# and how pods reach other nodes' pods: flags of every kubelet, passed when the binary has them.
CLUSTER_DNS=${CLUSTER_DNS:-169.254.20.10}
CLUSTER_DOMAIN=${CLUSTER_DOMAIN:-cluster.local}
NETWORK_MODE=${NETWORK_MODE:-host-gw}
kubelet_network_args() {
  if has_flag kubelet cluster-dns; then printf '%s\n' --cluster-dns "$CLUSTER_DNS" --cluster-domain "$CLUSTER_DOMAIN"; fi
  if has_flag kubelet cluster-cidr; then printf '%s\n' --cluster-cidr "$CLUSTER_CIDR"; fi
  if has_flag kubelet network-mode; then printf '%s\n' --network-mode "$NETWORK_MODE"; fi
}

# kubeproxy: this host's Services (iptables), cluster DNS at CLUSTER_DNS, Ingress hosts in
# /etc/hosts. It needs root.
kubeproxy_args() {
  printf '%s\n' --kubeconfig "$KUBECONFIG_DIR/kubeproxy.kubeconfig" --node "$NODE_NAME" --amqp-url "$AMQP_URL" \
    --cluster-cidr "$CLUSTER_CIDR" --service-cidr "$SERVICE_CIDR" --dns-address "$CLUSTER_DNS" \
    --cluster-domain "$CLUSTER_DOMAIN" --metrics-address "$KUBEPROXY_METRICS_ADDRESS"
  extra_args "$KUBEPROXY_EXTRA_ARGS"
}

# kubeproxy serves /metrics and /healthz on every address of its node (each node of make
# cluster has a network namespace of its own), so Prometheus reaches it at the node's address;
# /healthz answers once it has synced.
KUBEPROXY_METRICS_ADDRESS=${KUBEPROXY_METRICS_ADDRESS:-0.0.0.0:10249}
kubeproxy_ready() { curl -fsS --max-time 3 http://127.0.0.1:10249/healthz >/dev/null 2>&1; }

# has_flag BINARY FLAG: the binary in BIN_DIR lists -FLAG in its --help.
has_flag() {
  local out
  [ -x "$BIN_DIR/$1" ] || return 1
  out=$("$BIN_DIR/$1" --help 2>&1) || true
  [[ $out =~ (^|$'\n')\ +--?$2[\ $'\n'] ]]
}

# A function name with '-' is fine in bash (not in POSIX sh); up.sh calls "${name}_args".
controller-manager_args() {
  printf '%s\n' --kubeconfig "$KUBECONFIG_DIR/controller-manager.kubeconfig" --amqp-url "$AMQP_URL"
  if has_flag controller-manager metrics-address; then
    printf '%s\n' --metrics-address "${CONTROLLER_MANAGER_METRICS_ADDRESS-$METRICS_HOST:10252}"
  fi
  extra_args "$CONTROLLER_MANAGER_EXTRA_ARGS"
}

# The kubelet is ready when its Node reports Ready.
kubelet_ready() { node_ready "$NODE_NAME"; }

# default_address prints the address of this host's default route (the one the kubelet
# registers as the node's InternalIP), or 127.0.0.1 when there is none.
default_address() {
  local a
  a=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "src") { print $(i + 1); exit } }')
  echo "${a:-127.0.0.1}"
}

# Where the scheduler, the controller-manager and serverless serve /metrics and /healthz:
# ports 10251, 10252 and 10253 of METRICS_HOST, unless SCHEDULER_METRICS_ADDRESS,
# CONTROLLER_MANAGER_METRICS_ADDRESS or SERVERLESS_METRICS_ADDRESS name a host:port (empty:
# off). make up uses the host's address, which pods reach (Prometheus scrapes them there);
# make cluster's control plane uses its bridge address, so neither takes the other's ports.
METRICS_HOST=${METRICS_HOST:-$(default_address)}

# The scheduler's strategy: balanced|roundrobin|random|leastpods|leastcpu|leastmemory.
SCHEDULER_STRATEGY=${SCHEDULER_STRATEGY:-balanced}

scheduler_args() {
  printf '%s\n' --kubeconfig "$KUBECONFIG_DIR/scheduler.kubeconfig" --amqp-url "$AMQP_URL" \
    --strategy "$SCHEDULER_STRATEGY"
  if has_flag scheduler metrics-address; then
    printf '%s\n' --metrics-address "${SCHEDULER_METRICS_ADDRESS-$METRICS_HOST:10251}"
  fi
  extra_args "$SCHEDULER_EXTRA_ARGS"
}

# The serverless component: function controller, gateway on SERVERLESS_GATEWAY_ADDRESS (which
# reaches pod IPs from this host), workflow engine; calls are counted in Redis at REDIS_ADDR.
REDIS_ADDR=${REDIS_ADDR:-127.0.0.1:6379}
SERVERLESS_EXTRA_ARGS=${SERVERLESS_EXTRA_ARGS:-}
serverless_args() {
  printf '%s\n' --kubeconfig "$KUBECONFIG_DIR/serverless.kubeconfig" --amqp-url "$AMQP_URL" \
    --redis-addr "$REDIS_ADDR" --gateway-address "$SERVERLESS_GATEWAY_ADDRESS" \
    --metrics-address "${SERVERLESS_METRICS_ADDRESS-$METRICS_HOST:10253}"
  extra_args "$SERVERLESS_EXTRA_ARGS"
}

# The gateway answers /healthz once the serverless caches are synced.
serverless_ready() { curl -fsS --max-time 3 "http://$SERVERLESS_GATEWAY_ADDRESS/healthz" >/dev/null 2>&1; }

# Extra flags for a component, word-split (e.g. CONTROLLER_MANAGER_EXTRA_ARGS="--node-monitor-period 1s").
SCHEDULER_EXTRA_ARGS=${SCHEDULER_EXTRA_ARGS:-}
CONTROLLER_MANAGER_EXTRA_ARGS=${CONTROLLER_MANAGER_EXTRA_ARGS:-}
KUBELET_EXTRA_ARGS=${KUBELET_EXTRA_ARGS:-}
KUBEPROXY_EXTRA_ARGS=${KUBEPROXY_EXTRA_ARGS:-}
extra_args() {
  # shellcheck disable=SC2086 # word splitting is the point
  [ -z "$1" ] || printf '%s\n' $1
}

log() { printf '[minik8s] %s\n' "$*"; }
die() { printf '[minik8s] ERROR: %s\n' "$*" >&2; exit 1; }

# pid_of NAME prints the pid from NAME's pid file when that process is alive and is NAME
# (a stale file whose pid was reused by something else must not be killed or trusted).
pid_of() {
  local f=$RUN_DIR/$1.pid pid
  [ -f "$f" ] || return 1
  pid=$(tr -dc '0-9' <"$f")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  # No pipe into grep -q: under pipefail its early exit can fail the pipeline (SIGPIPE).
  local cmd
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline") || return 1
  [[ $cmd == *"$1"* ]] || return 1
  printf '%s\n' "$pid"
}

# wait_for DESC SECONDS CMD... retries CMD every second until it succeeds or time runs out.
wait_for() {
  local desc=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs; i++)); do
    if "$@"; then return 0; fi
    sleep 1
  done
  log "timed out after ${secs}s waiting for $desc"
  return 1
}

# cluster_vhost prints this cluster's vhost name, minik8s-<id>, making the id on first use.
cluster_vhost() {
  local f=$MINIK8S_HOME/cluster-id
  if [ ! -s "$f" ]; then
    mkdir -p "$MINIK8S_HOME"
    od -An -tx1 -N6 /dev/urandom | tr -d ' \n' >"$f"
  fi
  printf 'minik8s-%s\n' "$(cat "$f")"
}

# rabbitmq_api METHOD PATH [JSON]: one management API call, as guest (loopback only) unless
# RABBITMQ_API names a user (http://user:password@host:port).
rabbitmq_api() {
  local auth=(-u guest:guest)
  [[ $RABBITMQ_API != *@* ]] || auth=()
  curl -fsS "${auth[@]}" -X "$1" -H 'content-type: application/json' ${3:+--data "$3"} "$RABBITMQ_API$2" >/dev/null
}

# ---- processes -------------------------------------------------------------------------
# spawn PIDFILE LOGFILE ARGV... runs ARGV in the background in a session of its own, so it
# outlives this shell and the CI step that ran it, output appended to LOGFILE. setsid, nohup
# and nsenter exec in turn, so the pid written is the program's.
spawn() {
  local pidf=$1 logf=$2
  shift 2
  mkdir -p "$(dirname "$pidf")" "$(dirname "$logf")"
  # A daemon keeps no descriptor of whoever started it beyond 0-2: one that kept a lock (fd 9
  # of with_lock, or a caller's `flock FILE -c 'make up'`) or make's jobserver pipes would hold
  # them for ever.
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
    done
    exec setsid nohup "$@" >>"$logf" 2>&1 </dev/null
  ) &
  echo $! >"$pidf"
}

# exited PID: the process is gone or a zombie (exited, not yet reaped).
exited() {
  local state
  state=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || state=
  [ -z "$state" ] || [ "$state" = Z ]
}

# stop_pid NAME PID GRACE: SIGTERM, then SIGKILL after GRACE seconds.
stop_pid() {
  local name=$1 pid=$2 grace=$3 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < grace * 10; i++)); do
    exited "$pid" && return 0
    sleep 0.1
  done
  log "$name did not stop in ${grace}s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    exited "$pid" && return 0
    sleep 0.1
  done
}

# start_component NAME starts bin/NAME with the flags NAME_args prints, unless it runs.
start_component() {
  local name=$1 pid logf=$LOG_DIR/$1.log args=()
  if pid=$(pid_of "$name"); then
    log "$name already running (pid $pid)"
    return
  fi
  mapfile -t args < <("${name}_args")
  log "starting $name (log: $logf)"
  spawn "$RUN_DIR/$name.pid" "$logf" "$BIN_DIR/$name" "${args[@]}"
}

# wait_component NAME waits until NAME_ready (when defined) succeeds; when the component exits
# or is not ready in 90 s, the last lines of its log are printed and the script fails.
wait_component() {
  local name=$1 i
  declare -F "${name}_ready" >/dev/null || return 0
  for ((i = 0; i < 90; i++)); do
    if "${name}_ready"; then log "$name ready"; return 0; fi
    # The pid just started, not pid_of: until the child has exec'd, its command line is
    # still this script's.
    if exited "$(cat "$RUN_DIR/$name.pid")"; then
      log "$name exited; last lines of $LOG_DIR/$name.log:"
      tail -n 40 "$LOG_DIR/$name.log" >&2 || true
      exit 1
    fi
    sleep 1
  done
  log "$name not ready after 90s; last lines of $LOG_DIR/$name.log:"
  tail -n 40 "$LOG_DIR/$name.log" >&2 || true
  exit 1
}

# stop_component NAME stops a component make up (or make cluster) started on this host.
stop_component() {
  local name=$1 pid
  if pid=$(pid_of "$name"); then
    log "stopping $name (pid $pid)"
    stop_pid "$name" "$pid" "${GRACE:-20}"
  fi
  rm -f "$RUN_DIR/$name.pid"
}
