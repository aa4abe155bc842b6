#!/usr/bin/env bash
# The worker nodes of make cluster, each a network namespace on the cluster's bridge with its
# own containerd, dockerd, Redis, kubelet and kubeproxy (DESIGN section 7). State, logs and pid
# files of node N live in $MINIK8S_HOME/nodes/N/.
#
#   scripts/node.sh add NODE                  make the node and start it; waits until it is Ready
#   scripts/node.sh remove NODE               stop it, delete its Node, remove all it made on this host
#   scripts/node.sh exec NODE -- CMD...       run CMD on the node (its network, its /etc/hosts, its name)
#   scripts/node.sh stop NODE [COMPONENT...]  SIGTERM its processes (default all); only the kubelet:
#                                             its containers keep running, as make down leaves them
#   scripts/node.sh kill NODE [COMPONENT...]  SIGKILL them: the node is lost, not shut down
#   scripts/node.sh start NODE [COMPONENT...] start what is not running; waits until the node is Ready
#   scripts/node.sh cut NODE | restore NODE   take the node's link down / up: a partition
#   scripts/node.sh list                      the nodes, their addresses, links, pod CIDRs, processes
#   scripts/node.sh logs [-f] NODE [COMPONENT] the last lines of a component's log (default kubelet)
#
# COMPONENT is one of containerd, dockerd, redis, kubelet, kubeproxy.
set -euo pipefail
# shellcheck source=scripts/cluster-lib.sh
. "$(dirname "$0")/cluster-lib.sh"

usage() {
  sed -n 's/^#   //p' "$0" >&2
  exit 2
}

# ---- components ------------------------------------------------------------------------
containerd_start() {
  cat >"$NODE_DIR/containerd.toml" <<TOML
version = 2
root = "$NODE_DIR/containerd"
state = "$NODE_DIR/containerd-state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$NODE_CTR_SOCK"
[debug]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$NODE_DIR/containerd-opt"
TOML
  rm -f "$NODE_CTR_SOCK"
  node_spawn containerd containerd --config "$NODE_DIR/containerd.toml"
}
containerd_ready() { [ -S "$NODE_CTR_SOCK" ] && ctr --address "$NODE_CTR_SOCK" version >/dev/null 2>&1; }

# dockerd: its own data and exec roots, socket, pid file and cgroup parent; an empty config
# file (the host's daemon.json is not its); the host engine's storage driver, known to work on
# this machine's disks; no bridge and no iptables rules (pods use CNI); its own containerd
# (dockerd would otherwise share the host's /run/containerd).
dockerd_start() {
  local driver
  driver=$(docker info --format '{{.Driver}}' 2>/dev/null) || die "the host's docker does not answer (its storage driver is the nodes')"
  echo '{}' >"$NODE_DIR/daemon.json"
  rm -f "$NODE_DIR/docker.pid"
  node_spawn dockerd dockerd --config-file "$NODE_DIR/daemon.json" \
    --data-root "$NODE_DIR/docker" --exec-root "$NODE_DIR/docker-exec" --pidfile "$NODE_DIR/docker.pid" \
    -H "unix://$NODE_SOCK" --containerd "$NODE_CTR_SOCK" \
    --exec-opt native.cgroupdriver=cgroupfs --cgroup-parent "$NODE_CGROUP" --storage-driver "$driver" \
    --bridge none --iptables=false --ip6tables=false
}
dockerd_ready() { docker -H "unix://$NODE_SOCK" version >/dev/null 2>&1; }

redis_start() {
  mkdir -p "$NODE_DIR/redis"
  node_spawn redis redis-server --bind 127.0.0.1 --port 6379 --save '' --appendonly no --dir "$NODE_DIR/redis"
}
redis_ready() { [ "$(in_node "$NODE_NAME" redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }

# The kubelet: the same binary and flags as on a real machine, at the node's address.
kubelet_start() {
  local args=(--node-name "$NODE_NAME" --node-ip "$NODE_IP" --address "$NODE_IP" --port 10250
    --kubeconfig "$NODE_DIR/kubeconfig" --root-dir "$NODE_DIR/kubelet" --docker-host "unix://$NODE_SOCK"
    --redis-addr 127.0.0.1:6379 --amqp-url "$NODE_AMQP_URL")
  mapfile -t -O ${#args[@]} args < <(kubelet_network_args)
  mapfile -t -O ${#args[@]} args < <(extra_args "$KUBELET_EXTRA_ARGS")
  node_kubeconfig "$MINIK8S_HOME/kubeconfigs/node-$NODE_NAME.kubeconfig" "$NODE_DIR/kubeconfig"
  node_spawn kubelet "$BIN_DIR/kubelet" "${args[@]}"
}

# kubeproxy: the node's Services, DNS at the cluster DNS address, Ingress hosts in the node's
# own hosts file (the nodes share this host's /etc; node.sh exec shows it as /etc/hosts).
kubeproxy_start() {
  if [ ! -x "$BIN_DIR/kubeproxy" ]; then
    log "$NODE_NAME: no $BIN_DIR/kubeproxy; the node runs without one"
    return
  fi
  local args=(--kubeconfig "$NODE_DIR/kubeproxy.kubeconfig" --node "$NODE_NAME" --amqp-url "$NODE_AMQP_URL"
    --cluster-cidr "$CLUSTER_CIDR" --service-cidr "$SERVICE_CIDR" --node-ip "$NODE_IP" --hosts-file "$NODE_DIR/hosts"
    --dns-address "$CLUSTER_DNS" --cluster-domain "$CLUSTER_DOMAIN" --metrics-address "$KUBEPROXY_METRICS_ADDRESS")
  mapfile -t -O ${#args[@]} args < <(extra_args "$KUBEPROXY_EXTRA_ARGS")
  node_kubeconfig "$MINIK8S_HOME/kubeconfigs/kubeproxy.kubeconfig" "$NODE_DIR/kubeproxy.kubeconfig"
  node_spawn kubeproxy "$BIN_DIR/kubeproxy" "${args[@]}"
}
# kubeproxy serves /metrics and /healthz on every address of the node (Prometheus scrapes the
# node's); /healthz answers once it has synced.
kubeproxy_ready() {
  [ -x "$BIN_DIR/kubeproxy" ] || return 0
  in_node "$NODE_NAME" curl -fsS --max-time 3 http://127.0.0.1:10249/healthz >/dev/null 2>&1
}

# node_spawn COMPONENT ARGV... starts the component in the node's namespace.
node_spawn() {
  local c=$1
  shift
  log "$NODE_NAME: starting $c (log: $NODE_LOGS/$c.log)"
  spawn "$NODE_RUN/$c.pid" "$NODE_LOGS/$c.log" nsenter --net="$NETNS_DIR/$NODE_NETNS" -- "$@"
}

# start_one COMPONENT starts it unless it runs and waits until it is ready (90 s).
start_one() {
  local c=$1 pid i
  if pid=$(node_pid "$NODE_NAME" "$c"); then
    return 0
  fi
  "${c}_start"
  declare -F "${c}_ready" >/dev/null || return 0
  [ -f "$NODE_RUN/$c.pid" ] || return 0
  for ((i = 0; i < 90; i++)); do
    if "${c}_ready"; then return 0; fi
    if exited "$(cat "$NODE_RUN/$c.pid")"; then
      log "$NODE_NAME: $c exited; last lines of $NODE_LOGS/$c.log:"
      tail -n 30 "$NODE_LOGS/$c.log" >&2 || true
      exit 1
    fi
    sleep 1
  done
  log "$NODE_NAME: $c not ready after 90s; last lines of $NODE_LOGS/$c.log:"
  tail -n 30 "$NODE_LOGS/$c.log" >&2 || true
  exit 1
}

# ---- images ----------------------------------------------------------------------------
# image_list [DOCKER_ARGS...] prints "reference id" of every minik8s/* image of an engine;
# with MINIK8S_MONITORING=0, not the monitoring stack's (MONITORING_IMAGES).
image_list() {
  local skip='<none>'
  [ "${MINIK8S_MONITORING:-1}" != 0 ] || skip="<none>|^minik8s/($(IFS='|'; echo "${MONITORING_IMAGES[*]}")):"
  docker "$@" images --no-trunc --format '{{.Repository}}:{{.Tag}} {{.ID}}' 'minik8s/*' | grep -Ev "$skip" | sort || true
}

# save_images writes every minik8s/* image of the host engine to one archive, again only when
# the host's images changed. Called with the cluster's lock held.
save_images() {
  local now
  now=$(image_list)
  [ -n "$now" ] || die "the host's docker has no minik8s/* images (make images builds them)"
  if [ -f "$CLUSTER_DIR/images.tar" ] && [ "$now" = "$(cat "$CLUSTER_DIR/images.list" 2>/dev/null)" ]; then
    return
  fi
  log "saving the host's minik8s/* images for the nodes"
  # shellcheck disable=SC2046 # one reference per word
  docker save -o "$CLUSTER_DIR/images.tar.tmp" $(printf '%s\n' "$now" | cut -d' ' -f1)
  mv "$CLUSTER_DIR/images.tar.tmp" "$CLUSTER_DIR/images.tar"
  printf '%s\n' "$now" >"$CLUSTER_DIR/images.list"
}

# load_images copies the host's minik8s/* images into the node's dockerd (docker save | load),
# unless it has them all.
load_images() {
  with_lock save_images
  local missing
  missing=$(comm -23 "$CLUSTER_DIR/images.list" <(image_list -H "unix://$NODE_SOCK"))
  [ -n "$missing" ] || return 0
  log "$NODE_NAME: loading $(wc -l <<<"$missing") images from the host's docker"
  docker -H "unix://$NODE_SOCK" load -q -i "$CLUSTER_DIR/images.tar" >/dev/null
}

# ---- network ---------------------------------------------------------------------------
# node_network makes the namespace and its eth0, one end of a veth whose other end is on the
# bridge; the node's address is on eth0, its default route via the host's bridge address.
node_network() {
  [ -e "$NETNS_DIR/$NODE_NETNS" ] || ip netns add "$NODE_NETNS"
  if ! ip link show "$NODE_VETH" >/dev/null 2>&1; then
    # A namespace left with an eth0 whose peer is gone cannot be: deleting one end deletes both.
    ip link add "$NODE_VETH" type veth peer name eth0 netns "$NODE_NETNS"
    ip link set "$NODE_VETH" master "$CLUSTER_BRIDGE" up
  elif ! ip link show "$NODE_VETH" | grep -q "master $CLUSTER_BRIDGE"; then
    ip link set "$NODE_VETH" master "$CLUSTER_BRIDGE"
  fi
  in_node "$NODE_NAME" ip link set lo up
  in_node "$NODE_NAME" ip addr replace "$NODE_IP/24" dev eth0
  in_node "$NODE_NAME" ip link set eth0 up
  in_node "$NODE_NAME" ip route replace default via "$CLUSTER_HOST_IP"
  # The node routes for its pods (and, host-gw, between the bridge and other nodes' pods).
  in_node "$NODE_NAME" sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward'
  if [ ! -f "$NODE_DIR/hosts" ]; then
    printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n' "$NODE_IP" "$NODE_NAME" >"$NODE_DIR/hosts"
  fi
}

# ---- commands --------------------------------------------------------------------------
need_node() {
  [ -n "${1:-}" ] || usage
  node_known "$1" || die "no node $1 in $MINIK8S_HOME (scripts/node.sh list; scripts/node.sh add $1)"
  node_load "$1"
}

# components_of [COMPONENT...] prints the requested components in start order (all when none).
components_of() {
  local c r
  for r in "$@"; do
    [[ " ${NODE_COMPONENTS[*]} " == *" $r "* ]] || die "unknown component $r (have: ${NODE_COMPONENTS[*]})"
  done
  for c in "${NODE_COMPONENTS[@]}"; do
    if [ $# -eq 0 ] || [[ " $* " == *" $c "* ]]; then echo "$c"; fi
  done
}

cmd_add() {
  [ $# -eq 1 ] || usage
  local name=$1
  valid_node_name "$name" || die "node name $name: lowercase letters, digits and '-', at most 63"
  require_root
  require_tools
  cluster_load
  ip link show "$CLUSTER_BRIDGE" >/dev/null 2>&1 || die "no bridge $CLUSTER_BRIDGE: start the cluster first (make cluster)"
  with_lock node_record "$name"
  node_load "$name"
  if [ ! -f "$MINIK8S_HOME/kubeconfigs/node-$name.kubeconfig" ]; then
    cluster_apply
    with_lock ensure_apiserver
  fi
  log "$NODE_NAME: $NODE_IP on $CLUSTER_BRIDGE (namespace $NODE_NETNS)"
  node_network
  start_node "${NODE_COMPONENTS[@]}"
}

# start_node COMPONENT... starts them in order, copies images once dockerd answers, and when
# the kubelet is among them waits until the Node is Ready and routes its pod CIDR.
start_node() {
  local c
  mkdir -p "$NODE_RUN" "$NODE_LOGS"
  for c in "$@"; do
    if [ "$c" = kubelet ]; then
      node_pid "$NODE_NAME" dockerd >/dev/null || die "$NODE_NAME: dockerd does not run (scripts/node.sh start $NODE_NAME)"
      load_images
    fi
    start_one "$c"
  done
  if [[ " $* " == *" kubelet "* ]]; then
    local i
    for ((i = 0; i < 90; i++)); do
      if node_ready "$NODE_NAME"; then break; fi
      if ! node_pid "$NODE_NAME" kubelet >/dev/null; then
        log "$NODE_NAME: the kubelet exited; last lines of $NODE_LOGS/kubelet.log:"
        tail -n 30 "$NODE_LOGS/kubelet.log" >&2 || true
        exit 1
      fi
      sleep 1
    done
    if ! node_ready "$NODE_NAME"; then
      log "$NODE_NAME: not Ready after 90s; last lines of $NODE_LOGS/kubelet.log:"
      tail -n 30 "$NODE_LOGS/kubelet.log" >&2 || true
      exit 1
    fi
    with_lock sync_routes
    log "$NODE_NAME: Ready"
  fi
}

cmd_start() {
  require_root
  cluster_load
  need_node "$@"
  shift
  local cs
  mapfile -t cs < <(components_of "$@")
  node_network
  start_node "${cs[@]}"
}

# stop_node SIGNAL COMPONENT... stops them in reverse order; TERM waits (dockerd stops its
# containers first, up to their grace periods), KILL does not.
stop_node() {
  local sig=$1 i c pid
  shift
  for ((i = $# ; i >= 1; i--)); do
    c=${!i}
    pid=$(node_pid "$NODE_NAME" "$c") || { rm -f "$NODE_RUN/$c.pid"; continue; }
    if [ "$sig" = KILL ]; then
      log "$NODE_NAME: killing $c (pid $pid)"
      kill -KILL "$pid" 2>/dev/null || true
    else
      log "$NODE_NAME: stopping $c (pid $pid)"
      stop_pid "$NODE_NAME $c" "$pid" "$([ "$c" = dockerd ] && echo 60 || echo 20)"
    fi
    rm -f "$NODE_RUN/$c.pid"
  done
}

cmd_stop() {
  local sig=$1
  shift
  require_root
  cluster_load
  need_node "$@"
  shift
  local cs
  mapfile -t cs < <(components_of "$@")
  stop_node "$sig" "${cs[@]}"
}

# node_pids prints the pids of every process in the node's namespace and cgroups.
node_pids() {
  [ ! -e "$NETNS_DIR/$NODE_NETNS" ] || ip netns pids "$NODE_NETNS" 2>/dev/null || true
  local f
  for f in /sys/fs/cgroup/*"$NODE_CGROUP"/cgroup.procs /sys/fs/cgroup"$NODE_CGROUP"/cgroup.procs; do
    [ -f "$f" ] || continue
    find "$(dirname "$f")" -name cgroup.procs -exec cat {} + 2>/dev/null || true
  done
}

# mounts_under DIR prints the mount points at or below DIR, deepest first.
mounts_under() {
  awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print length($5), $5 }' /proc/self/mountinfo |
    sort -rn | cut -d' ' -f2-
}

cmd_remove() {
  [ $# -eq 1 ] || usage
  require_root
  cluster_load
  node_load "$1"
  [ -d "$NODE_DIR" ] || [ -e "$NETNS_DIR/$NODE_NETNS" ] || die "no node $1 in $MINIK8S_HOME"
  remove_node
}

# remove_node stops the node and removes everything it made; each step goes on when an
# earlier one failed, so a half-made node goes too.
remove_node() {
  log "$NODE_NAME: removing"
  stop_node TERM kubelet kubeproxy
  # The pods' containers go first, so dockerd has nothing to stop or unmount on exit.
  if node_pid "$NODE_NAME" dockerd >/dev/null; then
    local ids
    ids=$(docker -H "unix://$NODE_SOCK" ps -aq 2>/dev/null) || ids=
    # shellcheck disable=SC2086 # one id per word
    [ -z "$ids" ] || docker -H "unix://$NODE_SOCK" rm -f $ids >/dev/null 2>&1 || true
  fi
  stop_node TERM containerd dockerd redis
  # Whatever still runs there (a shim, a container dockerd lost) is killed.
  local pids i
  for ((i = 0; i < 50; i++)); do
    pids=$(node_pids | sort -u | tr '\n' ' ')
    [ -n "${pids// /}" ] || break
    # shellcheck disable=SC2086 # one pid per word
    kill -KILL $pids 2>/dev/null || true
    sleep 0.1
  done
  local m
  while IFS= read -r m; do
    [ -n "$m" ] || continue
    umount "$m" 2>/dev/null || umount -l "$m" || log "WARNING: cannot unmount $m"
  done < <(mounts_under "$NODE_DIR")
  local d
  for d in /sys/fs/cgroup/*"$NODE_CGROUP" /sys/fs/cgroup"$NODE_CGROUP"; do
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || find "$d" -depth -type d -exec rmdir {} + ||
      log "WARNING: cannot remove cgroup $d"
  done
  # Deleting the namespace deletes eth0 and so its peer on the bridge, the pod bridge and the
  # node's iptables rules inside.
  if [ -e "$NETNS_DIR/$NODE_NETNS" ]; then ip netns del "$NODE_NETNS" || log "WARNING: cannot delete namespace $NODE_NETNS"; fi
  if [ -n "$NODE_VETH" ] && ip link show "$NODE_VETH" >/dev/null 2>&1; then ip link del "$NODE_VETH" || true; fi
  if apiserver_ready; then api_call DELETE "/api/v1/nodes/$NODE_NAME" >/dev/null 2>&1 || true; fi
  rm -rf -- "$NODE_DIR"
  with_lock sync_routes
  log "$NODE_NAME: removed"
}

cmd_cut() {
  require_root
  cluster_load
  need_node "${1:-}"
  ip link set "$NODE_VETH" down
  log "$NODE_NAME: link $NODE_VETH down (partitioned from the host and the other nodes)"
}

cmd_restore() {
  require_root
  cluster_load
  need_node "${1:-}"
  ip link set "$NODE_VETH" up
  log "$NODE_NAME: link $NODE_VETH up"
}

# exec: the node's network namespace; a mount namespace of the command's own shows the node's
# hosts file (where its kubeproxy puts Ingress hosts) as /etc/hosts, a UTS one its name.
cmd_exec() {
  cluster_load
  need_node "${1:-}"
  shift
  [ "${1:-}" = -- ] || usage
  shift
  [ $# -gt 0 ] || usage
  # shellcheck disable=SC2016 # expanded by the inner bash
  exec unshare --mount --uts --propagation private -- bash -c '
    hosts=$1 name=$2 ns=$3
    shift 3
    if [ -f "$hosts" ]; then mount --bind "$hosts" /etc/hosts; fi
    hostname "$name"
    exec nsenter --net="$ns" -- "$@"' node-exec "$NODE_DIR/hosts" "$NODE_NAME" "$NETNS_DIR/$NODE_NETNS" "$@"
}

cmd_list() {
  cluster_load
  local api='' n link procs c cidr
  if apiserver_ready; then api=1; fi
  printf '%-20s %-15s %-5s %-18s %s\n' NODE ADDRESS LINK POD-CIDR PROCESSES
  for n in $(node_names); do
    node_load "$n"
    link='cut'
    if ! ip link show "$NODE_VETH" >/dev/null 2>&1; then link=none
    elif ip link show "$NODE_VETH" | grep -q '<[^>]*,UP[,>]'; then link=up; fi
    procs=
    for c in "${NODE_COMPONENTS[@]}"; do
      if node_pid "$n" "$c" >/dev/null; then procs+="$c,"; fi
    done
    cidr='<unknown>'
    if [ -n "$api" ]; then cidr=$(node_pod_cidr "$n"); fi
    printf '%-20s %-15s %-5s %-18s %s\n' "$n" "$NODE_IP" "$link" "${cidr:-<none>}" "${procs%,}"
  done
}

cmd_logs() {
  local follow=()
  if [ "${1:-}" = -f ]; then follow=(-f); shift; fi
  cluster_load
  need_node "${1:-}"
  local c=${2:-kubelet}
  components_of "$c" >/dev/null
  [ -f "$NODE_LOGS/$c.log" ] || die "no log $NODE_LOGS/$c.log"
  exec tail -n "${LINES_SHOWN:-100}" "${follow[@]}" "$NODE_LOGS/$c.log"
}

cmd=${1:-}
[ $# -eq 0 ] || shift
case $cmd in
  add) cmd_add "$@" ;;
  remove) cmd_remove "$@" ;;
  exec) cmd_exec "$@" ;;
  stop) cmd_stop TERM "$@" ;;
  kill) cmd_stop KILL "$@" ;;
  start) cmd_start "$@" ;;
  cut) cmd_cut "$@" ;;
  restore) cmd_restore "$@" ;;
  list) cmd_list ;;
  logs) cmd_logs "$@" ;;
  *) usage ;;
esac
