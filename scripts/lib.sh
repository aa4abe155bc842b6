# Shared by up.sh and down.sh: paths, the component table and small helpers.
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
)

# Long-running components `make up` starts, in start order (down stops them in reverse).
# Each needs a function <name>_args printing its flags one per line, and may define
# <name>_ready (return 0 when serving) for up.sh to wait on.
COMPONENTS=(apiserver kubelet scheduler controller-manager)

APISERVER_BIND=${APISERVER_BIND:-127.0.0.1}
APISERVER_PORT=${APISERVER_PORT:-6443}
# AMQP_URL, when set, is used as given. Otherwise the cluster gets a RabbitMQ vhost of its own,
# named after the id in $MINIK8S_HOME/cluster-id (see cluster_vhost): after `make reset` the
# new cluster's etcd counts resourceVersions from 1 again, and messages the old cluster left
# in durable queues would make its components ignore the new one's changes as stale.
AMQP_URL=${AMQP_URL:-}
RABBITMQ_API=${RABBITMQ_API:-http://127.0.0.1:15672}
ETCD_SERVERS=${ETCD_SERVERS:-}
ADVERTISE_ADDRESS=${ADVERTISE_ADDRESS:-}
# The one node `make up` runs on this machine.
NODE_NAME=${NODE_NAME:-$(hostname | tr '[:upper:]' '[:lower:]')}
KUBELET_PORT=${KUBELET_PORT:-10250}

apiserver_args() {
  printf '%s\n' --home "$MINIK8S_HOME" --bind-address "$APISERVER_BIND" \
    --secure-port "$APISERVER_PORT" --etcd-servers "$ETCD_SERVERS" --amqp-url "$AMQP_URL" \
    --nodes "$NODE_NAME"
  if [ -n "$ADVERTISE_ADDRESS" ]; then printf '%s\n' --advertise-address "$ADVERTISE_ADDRESS"; fi
}

# /readyz with the admin token: anonymous access is off. The CA and token file appear only
# once the apiserver has run its first-start setup, so both are read on every attempt.
apiserver_ready() {
  local ca=$MINIK8S_HOME/pki/ca.crt tokens=$MINIK8S_HOME/tokens.csv token
  [ -f "$ca" ] && [ -f "$tokens" ] || return 1
  token=$(awk -F, '$2 == "admin" { print $1; exit }' "$tokens")
  curl -fsS --max-time 3 --cacert "$ca" -H "Authorization: Bearer $token" \
    "https://127.0.0.1:$APISERVER_PORT/readyz" >/dev/null 2>&1
}

kubelet_args() {
  printf '%s\n' --node-name "$NODE_NAME" --kubeconfig "$MINIK8S_HOME/kubeconfigs/node-$NODE_NAME.kubeconfig" \
    --root-dir "$MINIK8S_HOME/kubelet" --port "$KUBELET_PORT" --amqp-url "$AMQP_URL"
}

# A function name with '-' is fine in bash (not in POSIX sh); up.sh calls "${name}_args".
controller-manager_args() {
  printf '%s\n' --kubeconfig "$MINIK8S_HOME/kubeconfigs/controller-manager.kubeconfig" --amqp-url "$AMQP_URL"
}

# The kubelet is ready when its Node reports Ready.
kubelet_ready() {
  local ca=$MINIK8S_HOME/pki/ca.crt tokens=$MINIK8S_HOME/tokens.csv token
  token=$(awk -F, '$2 == "admin" { print $1; exit }' "$tokens")
  curl -fsS --max-time 3 --cacert "$ca" -H "Authorization: Bearer $token" \
    "https://127.0.0.1:$APISERVER_PORT/api/v1/nodes/$NODE_NAME" 2>/dev/null |
    tr -d ' \n' | grep -q '"type":"Ready","status":"True"'
}

# The scheduler's strategy: balanced|roundrobin|random|leastpods|leastcpu|leastmemory.
SCHEDULER_STRATEGY=${SCHEDULER_STRATEGY:-balanced}

scheduler_args() {
  printf '%s\n' --kubeconfig "$MINIK8S_HOME/kubeconfigs/scheduler.kubeconfig" --amqp-url "$AMQP_URL" \
    --strategy "$SCHEDULER_STRATEGY"
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

# rabbitmq_api METHOD PATH [JSON]: one management API call as guest (loopback only).
rabbitmq_api() {
  curl -fsS -u guest:guest -X "$1" -H 'content-type: application/json' ${3:+--data "$3"} "$RABBITMQ_API$2" >/dev/null
}
