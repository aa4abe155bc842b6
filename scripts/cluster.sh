#!/usr/bin/env bash
# make cluster / make cluster-down: a control plane on this host (apiserver, scheduler,
# controller-manager and a kubeproxy for the host) and worker nodes, each a network namespace
# on a bridge of the cluster's own with its own containerd, dockerd, Redis, kubelet and
# kubeproxy (scripts/node.sh makes them). See docs/operations.md, "Several nodes on one machine".
#
#   scripts/cluster.sh up [N]   start what is not running: the control plane, the nodes this host
#                               has a record of, and node-1..node-N (default $NODES, else 2)
#   scripts/cluster.sh down     remove the nodes, stop the control plane, remove the bridge, routes,
#                               rules, the broker's vhost and user, and the cluster's state
#   scripts/cluster.sh status   the control plane's processes and the nodes
#   scripts/cluster.sh routes   bring this host's routes to the pod CIDRs in step with the Nodes
#
# Settings, read from the environment on the first `up` and kept in $MINIK8S_HOME/cluster/env:
# CLUSTER_ID (a-z0-9, at most 6: names the bridge mk8s-<id>, veths mk8s-<id>-<n>, namespaces and
# cgroups mk8s-<id>-<node>), CLUSTER_SUBNET (a free 10.199.<n>.0/24), CLUSTER_CIDR, SERVICE_CIDR,
# APISERVER_PORT, ETCD_CLIENT_PORT, ETCD_PEER_PORT, RABBITMQ_HOST, RABBITMQ_PORT, HOST_KUBEPROXY
# (1), NETWORK_MODE (host-gw), CLUSTER_DNS, CLUSTER_DOMAIN, SCHEDULER_STRATEGY, NODE_PREFIX
# (node-) and <COMPONENT>_EXTRA_ARGS; SCHEDULER_STRATEGY, HOST_KUBEPROXY and the *_EXTRA_ARGS
# given to a later `up` replace the recorded ones (for what it starts). NODE_NAMES
# (space-separated) names the nodes instead of NODE_PREFIX1..N; HOST_COMPONENTS (default
# "scheduler controller-manager kubeproxy serverless") says what starts on this host after the
# nodes.
set -euo pipefail
# shellcheck source=scripts/cluster-lib.sh
. "$(dirname "$0")/cluster-lib.sh"
SCRIPTS=$(cd "$(dirname "$0")" && pwd)

# The host's kubeproxy (ClusterIPs and NodePorts work from this host too) is make up's, as
# the host's node: named after the host, at the bridge address.
host_kubeproxy_args() {
  NODE_NAME=$(hostname | tr '[:upper:]' '[:lower:]') kubeproxy_args
  printf '%s\n' --node-ip "$CLUSTER_HOST_IP"
}

# other_host_kubeproxy prints the pid of a kubeproxy in this host's namespace that is not the
# cluster's (make up's, from another MINIK8S_HOME): two would fight over the same rules.
other_host_kubeproxy() {
  local pid mine host
  mine=$(pid_of kubeproxy || true)
  host=$(stat -L -c %i /proc/self/ns/net)
  for pid in $(pgrep -x kubeproxy || true); do
    [ "$pid" != "$mine" ] || continue
    [ "$(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null)" = "$host" ] && { echo "$pid"; return 0; }
  done
  return 1
}

start_host_kubeproxy() {
  [ "$HOST_KUBEPROXY" = 1 ] || return 0
  if [ ! -x "$BIN_DIR/kubeproxy" ]; then
    log "no $BIN_DIR/kubeproxy: this host runs without one"
    return 0
  fi
  local pid args=()
  if pid=$(pid_of kubeproxy); then
    log "kubeproxy (this host's) already running (pid $pid)"
    return 0
  fi
  if pid=$(other_host_kubeproxy); then
    log "WARNING: another kubeproxy (pid $pid) runs on this host; the cluster's is not started (ClusterIPs do not work from this host)"
    return 0
  fi
  mapfile -t args < <(host_kubeproxy_args)
  log "starting kubeproxy for this host (log: $LOG_DIR/kubeproxy.log)"
  # cluster-down removes what it leaves on this host (its rules stay when it stops, by design).
  touch "$CLUSTER_DIR/host-kubeproxy"
  spawn "$RUN_DIR/kubeproxy.pid" "$LOG_DIR/kubeproxy.log" "$BIN_DIR/kubeproxy" "${args[@]}"
  wait_component kubeproxy
}

# each_node CMD NAME...: node.sh CMD for every node at once; fails when one failed.
each_node() {
  local cmd=$1 n pids=() failed=0 i=0
  shift
  for n in "$@"; do
    "$SCRIPTS/node.sh" "$cmd" "$n" &
    pids+=($!)
  done
  for n in "$@"; do
    wait "${pids[i]}" || { log "node.sh $cmd $n failed"; failed=1; }
    i=$((i + 1))
  done
  return "$failed"
}

# remove_host_kubeproxy_state removes what the host's kubeproxy left: its MINIK8S- chains and
# the jumps to them, the DNS address and its dummy link, the Ingress block of /etc/hosts.
remove_host_kubeproxy_state() {
  [ -f "$CLUSTER_DIR/host-kubeproxy" ] || return 0
  local t line chains
  for t in filter nat; do
    while IFS= read -r line; do
      eval "iptables -t $t -D ${line#-A }" || true
    done < <(iptables-save -t "$t" 2>/dev/null | grep -E '^-A [^M][^ ]* .*-j MINIK8S-' || true)
    chains=$(iptables-save -t "$t" 2>/dev/null | sed -n 's/^:\(MINIK8S-[^ ]*\) .*/\1/p')
    for line in $chains; do iptables -t "$t" -F "$line" || true; done
    for line in $chains; do iptables -t "$t" -X "$line" || true; done
  done
  if ip link show minik8s-dns >/dev/null 2>&1; then ip link del minik8s-dns || true; fi
  ip addr del "$CLUSTER_DNS/32" dev lo 2>/dev/null || true
  if grep -q '^# BEGIN minik8s ingress hosts' /etc/hosts; then
    # In place: /etc/hosts may be a bind mount (in a container) that a rename would not replace.
    local kept
    kept=$(sed '/^# BEGIN minik8s ingress hosts/,/^# END minik8s ingress hosts/d' /etc/hosts)
    printf '%s\n' "$kept" >/etc/hosts
  fi
  log "removed the host kubeproxy's rules, DNS address and hosts block"
}

cmd_up() {
  local count=${1:-${NODES:-2}} names=() n
  [[ $count =~ ^[0-9]+$ ]] || die "usage: $0 up [NODES]"
  require_root
  require_tools
  if n=$(pid_of kubelet); then
    die "make up's one-node cluster runs in $MINIK8S_HOME (kubelet pid $n): make down first, or set another MINIK8S_HOME"
  fi
  if cluster_exists; then cluster_update; else cluster_create; fi
  if [ -n "${NODE_NAMES:-}" ]; then
    read -r -a names <<<"$NODE_NAMES"
  else
    for ((n = 1; n <= count; n++)); do names+=("$NODE_PREFIX$n"); done
  fi
  # Nodes already made (node.sh add) come back too, after a reboot say.
  for n in $(node_names); do
    [[ " ${names[*]} " == *" $n "* ]] || names+=("$n")
  done
  for n in "${names[@]}"; do
    valid_node_name "$n" || die "node name $n: lowercase letters, digits and '-', at most 63"
    with_lock node_record "$n"
  done
  cluster_apply

  ensure_broker
  ensure_host_network
  mkdir -p "$RUN_DIR" "$LOG_DIR"
  ensure_apiserver
  # The nodes join before the scheduler starts, so its first list has them all.
  each_node add "${names[@]}" || die "not every node started; scripts/node.sh list shows them, logs in $NODES_DIR/<node>/logs/"
  local c
  for c in ${HOST_COMPONENTS-scheduler controller-manager kubeproxy serverless}; do
    case $c in
      kubeproxy) start_host_kubeproxy ;;
      scheduler | controller-manager | serverless)
        start_component "$c"
        wait_component "$c"
        ;;
      *) die "HOST_COMPONENTS: unknown $c (scheduler, controller-manager, kubeproxy, serverless)" ;;
    esac
  done
  with_lock sync_routes
  # The state directory's kubeconfig, unless an earlier make up made it name another port.
  local kc=$MINIK8S_HOME/kubeconfig
  grep -Eq "server: https://(127\.0\.0\.1|$CLUSTER_HOST_IP):$APISERVER_PORT\$" "$kc" || kc=$CLUSTER_DIR/kubeconfig
  # The monitoring stack needs the scheduler and the controller-manager running.
  local hc=" ${HOST_COMPONENTS-scheduler controller-manager kubeproxy serverless} "
  if [ "${MINIK8S_MONITORING:-1}" != 0 ] && [[ $hc == *" scheduler "* && $hc == *" controller-manager "* ]]; then
    KUBECONFIG_FILE=$kc METRICS_HOST=$METRICS_HOST "$SCRIPTS/monitoring.sh" install
  fi
  cat <<MSG
[minik8s] cluster $CLUSTER_ID is up: ${#names[@]} nodes on bridge $CLUSTER_BRIDGE ($CLUSTER_SUBNET), state in $MINIK8S_HOME
  apiserver:     https://$CLUSTER_HOST_IP:$APISERVER_PORT (from this host and the nodes)
  our kubectl:   bin/kubectl --kubeconfig $kc get nodes -o wide
  real kubectl:  kubectl --kubeconfig $kc get nodes   (or: export KUBECONFIG=$kc)
  nodes:         scripts/node.sh list
  on a node:     scripts/node.sh exec ${names[0]:-node-1} -- ip -4 addr show eth0
  more:          scripts/node.sh add|remove|stop|start|kill|cut|restore|logs NODE
  logs:          $LOG_DIR/ (control plane), $NODES_DIR/<node>/logs/
  RabbitMQ UI:   http://localhost:15672 (guest/guest), vhost $AMQP_VHOST
  remove it all: make cluster-down
MSG
}

# remove_function_images removes the function images the cluster's serverless component built
# on this host's engine (labeled with the cluster's vhost; make up's, on the same engine, stay).
remove_function_images() {
  local ids
  ids=$(docker images -q --no-trunc --filter "label=serverless.minik8s.io/cluster=$AMQP_VHOST" 2>/dev/null | sort -u)
  [ -n "$ids" ] || return 0
  # shellcheck disable=SC2086 # one id a word
  if docker rmi -f $ids >/dev/null; then
    log "removed $(wc -w <<<"$ids") function images of the cluster from this host's docker"
  else
    log "WARNING: not every function image of the cluster was removed (docker images --filter label=serverless.minik8s.io/cluster=$AMQP_VHOST)"
  fi
}

cmd_down() {
  require_root
  if ! cluster_exists; then
    log "no multi-node cluster in $MINIK8S_HOME"
    return 0
  fi
  cluster_load
  local names=() n d
  for d in "$NODES_DIR"/*/; do
    [ -d "$d" ] && names+=("$(basename "$d")")
  done
  # A namespace whose node directory is gone (a removal cut short) goes too.
  for n in $(ip netns list 2>/dev/null | awk -v p="mk8s-$CLUSTER_ID-" 'index($1, p) == 1 { print substr($1, length(p) + 1) }'); do
    [[ " ${names[*]} " == *" $n "* ]] || names+=("$n")
  done
  local failed=0
  if [ ${#names[@]} -gt 0 ]; then each_node remove "${names[@]}" || failed=1; fi
  stop_component kubeproxy
  remove_host_kubeproxy_state
  stop_component serverless
  remove_function_images
  stop_component controller-manager
  stop_component scheduler
  stop_component apiserver
  remove_host_network
  delete_broker || failed=1
  rm -rf -- "$CLUSTER_DIR" "$NODES_DIR"
  [ "$failed" = 0 ] || die "the cluster is removed, with the warnings above"
  log "cluster $CLUSTER_ID removed; the control plane's data (certificates, tokens, etcd) stays in $MINIK8S_HOME (make reset deletes it)"
}

cmd_status() {
  cluster_load
  local c pid
  for c in apiserver scheduler controller-manager kubeproxy; do
    if pid=$(pid_of "$c"); then log "$c running (pid $pid)"; else log "$c not running"; fi
  done
  "$SCRIPTS/node.sh" list
}

cmd=${1:-}
[ $# -eq 0 ] || shift
case $cmd in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  routes) require_root; cluster_load; with_lock sync_routes ;;
  *) sed -n 's/^#   //p' "$0" >&2; exit 2 ;;
esac
