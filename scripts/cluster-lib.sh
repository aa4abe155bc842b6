# Shared by cluster.sh and node.sh: the multi-node cluster's record, its nodes' layout, the
# host's bridge, routes and broker user. See docs/operations.md, "Several nodes on one machine".
# shellcheck shell=bash
# Settings a later `up` may change (for the processes it starts), when given in the environment;
# read before lib.sh gives them defaults.
CLUSTER_OVERRIDABLE=(SCHEDULER_STRATEGY SCHEDULER_EXTRA_ARGS CONTROLLER_MANAGER_EXTRA_ARGS KUBELET_EXTRA_ARGS
  KUBEPROXY_EXTRA_ARGS HOST_KUBEPROXY)
CLUSTER_OVERRIDES=()
for _v in "${CLUSTER_OVERRIDABLE[@]}"; do
  if [ -n "${!_v+x}" ]; then CLUSTER_OVERRIDES+=("$_v=${!_v}"); fi
done
unset _v
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLUSTER_DIR=$MINIK8S_HOME/cluster
CLUSTER_ENV=$CLUSTER_DIR/env
NODES_DIR=$MINIK8S_HOME/nodes
NETNS_DIR=/var/run/netns
# A node's processes in start order; they are stopped in reverse.
NODE_COMPONENTS=(containerd dockerd redis kubelet kubeproxy)
# What the cluster records on its first `up`; later commands read the record, so a node added
# next week gets the same settings.
CLUSTER_SETTINGS=(CLUSTER_ID CLUSTER_BRIDGE CLUSTER_SUBNET CLUSTER_HOST_IP CLUSTER_CIDR SERVICE_CIDR
  APISERVER_PORT ETCD_CLIENT_PORT ETCD_PEER_PORT AMQP_VHOST AMQP_USER AMQP_PASSWORD RABBITMQ_HOST
  RABBITMQ_PORT HOST_KUBEPROXY NETWORK_MODE CLUSTER_DNS CLUSTER_DOMAIN SCHEDULER_STRATEGY
  SCHEDULER_EXTRA_ARGS CONTROLLER_MANAGER_EXTRA_ARGS KUBELET_EXTRA_ARGS KUBEPROXY_EXTRA_ARGS NODE_PREFIX)

cluster_exists() { [ -f "$CLUSTER_ENV" ]; }

require_root() {
  [ "$(id -u)" -eq 0 ] || die "the multi-node cluster makes network namespaces, links and routes and runs dockerd: run as root"
}

# require_tools: what a node needs on this host, named when missing.
require_tools() {
  local t missing=()
  for t in ip nsenter unshare flock iptables curl containerd ctr dockerd docker redis-server redis-cli; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  [ ${#missing[@]} -eq 0 ] || die "missing on PATH: ${missing[*]} (make up installs them: docker.io brings containerd and ctr, redis-server redis-cli)"
  for t in apiserver kubectl kubelet scheduler controller-manager; do
    [ -x "$BIN_DIR/$t" ] || die "no $BIN_DIR/$t: build first (scripts/up.sh build)"
  done
}

# used_ipv4 prints every address, route and NAT/filter rule on this host: a block whose prefix
# appears there is taken.
used_ipv4() {
  ip -4 -o addr show
  ip -4 route show table all
  iptables-save 2>/dev/null || true
}

# free_subnet prints the first 10.199.<n>.0/24 nothing on this host uses.
free_subnet() {
  local used n
  used=$(used_ipv4)
  for ((n = 0; n < 256; n++)); do
    if [[ $used != *"10.199.$n."* ]]; then
      printf '10.199.%d.0/24\n' "$n"
      return
    fi
  done
  die "no free 10.199.<n>.0/24 on this host: set CLUSTER_SUBNET"
}

# cluster_create records the settings from the environment (defaults below) the first time;
# cluster_load reads them back. Either way the lib.sh variables the control plane's flags come
# from are then set for this cluster.
cluster_create() {
  mkdir -p "$CLUSTER_DIR" "$NODES_DIR"
  chmod 700 "$MINIK8S_HOME"
  local cid
  cluster_vhost >/dev/null
  cid=$(cat "$MINIK8S_HOME/cluster-id")
  CLUSTER_ID=${CLUSTER_ID:-$(printf '%s' "$cid" | tr -dc 'a-z0-9' | cut -c1-6)}
  [[ $CLUSTER_ID =~ ^[a-z0-9]{1,6}$ ]] || die "CLUSTER_ID $CLUSTER_ID: 1 to 6 of a-z0-9 (it names links, at most 15 characters)"
  CLUSTER_BRIDGE=${CLUSTER_BRIDGE:-mk8s-$CLUSTER_ID}
  if ip link show "$CLUSTER_BRIDGE" >/dev/null 2>&1; then
    die "link $CLUSTER_BRIDGE exists but $MINIK8S_HOME has no cluster: another cluster's? Set CLUSTER_ID, or remove it (ip link del $CLUSTER_BRIDGE)"
  fi
  CLUSTER_SUBNET=${CLUSTER_SUBNET:-$(free_subnet)}
  [[ $CLUSTER_SUBNET =~ ^([0-9]+\.[0-9]+\.[0-9]+)\.0/24$ ]] || die "CLUSTER_SUBNET $CLUSTER_SUBNET: want a.b.c.0/24"
  CLUSTER_HOST_IP=${BASH_REMATCH[1]}.1
  AMQP_VHOST=$(cluster_vhost)
  AMQP_USER=$AMQP_VHOST
  AMQP_PASSWORD=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  RABBITMQ_HOST=${RABBITMQ_HOST:-127.0.0.1}
  RABBITMQ_PORT=${RABBITMQ_PORT:-5672}
  HOST_KUBEPROXY=${HOST_KUBEPROXY:-1}
  NETWORK_MODE=${NETWORK_MODE:-host-gw}
  CLUSTER_DNS=${CLUSTER_DNS:-169.254.20.10}
  CLUSTER_DOMAIN=${CLUSTER_DOMAIN:-cluster.local}
  NODE_PREFIX=${NODE_PREFIX:-node-}
  cluster_save
  log "new cluster $CLUSTER_ID: bridge $CLUSTER_BRIDGE on $CLUSTER_SUBNET, pod network $CLUSTER_CIDR"
  cluster_apply
}

cluster_save() {
  local v
  {
    echo "# make cluster's settings, written at its first start (scripts/cluster-lib.sh)"
    for v in "${CLUSTER_SETTINGS[@]}"; do printf '%s=%q\n' "$v" "${!v}"; done
  } >"$CLUSTER_ENV.tmp"
  chmod 600 "$CLUSTER_ENV.tmp"
  mv "$CLUSTER_ENV.tmp" "$CLUSTER_ENV"
}

cluster_load() {
  cluster_exists || die "no multi-node cluster in $MINIK8S_HOME (make cluster starts one)"
  # shellcheck disable=SC1090 # written by cluster_create
  . "$CLUSTER_ENV"
  cluster_apply
}

# cluster_update is cluster_load, and the overridable settings the environment gives replace
# the recorded ones.
cluster_update() {
  cluster_load
  [ ${#CLUSTER_OVERRIDES[@]} -gt 0 ] || return 0
  local o
  for o in "${CLUSTER_OVERRIDES[@]}"; do printf -v "${o%%=*}" '%s' "${o#*=}"; done
  with_lock cluster_save
}

# cluster_apply points the control plane's flags (lib.sh) at this cluster: the apiserver
# listens on every address and names the bridge address in its kubeconfigs, so the nodes and
# this host reach it; every component uses the cluster's broker user and vhost.
cluster_apply() {
  APISERVER_BIND=0.0.0.0
  ADVERTISE_ADDRESS=$CLUSTER_HOST_IP
  METRICS_HOST=$CLUSTER_HOST_IP
  # The serverless gateway reaches pods through the host's routes to the nodes' pod CIDRs
  # (sync_routes); it listens on the bridge address, beside make up's on 127.0.0.1.
  SERVERLESS_GATEWAY_ADDRESS=$CLUSTER_HOST_IP:8090
  AMQP_URL=amqp://$AMQP_USER:$AMQP_PASSWORD@$RABBITMQ_HOST:$RABBITMQ_PORT/$AMQP_VHOST
  local h=$RABBITMQ_HOST
  # A broker on this host's loopback is reached from the nodes at the bridge address.
  if [ "$h" = 127.0.0.1 ] || [ "$h" = localhost ]; then h=$CLUSTER_HOST_IP; fi
  NODE_AMQP_URL=amqp://$AMQP_USER:$AMQP_PASSWORD@$h:$RABBITMQ_PORT/$AMQP_VHOST
  APISERVER_NODES=$(cluster_node_names | paste -sd, -)
  APISERVER_NODES=${APISERVER_NODES:-none}
  KUBECONFIG_DIR=$CLUSTER_DIR/kubeconfigs
}

# cluster_node_names prints the names that have (or get) a node identity at the apiserver.
cluster_node_names() { [ ! -f "$CLUSTER_DIR/nodes" ] || cat "$CLUSTER_DIR/nodes"; }

# with_lock CMD... runs CMD holding the cluster's lock (node indexes, identities, images).
with_lock() {
  mkdir -p "$CLUSTER_DIR"
  (
    flock 9
    "$@"
  ) 9>"$CLUSTER_DIR/lock"
}

# ---- broker ----------------------------------------------------------------------------
# The nodes come in over the bridge, where guest may not log in: the cluster has a user and a
# vhost of its own, made and deleted through the management API (no global setting changes).
ensure_broker() {
  local perm='{"configure":".*","write":".*","read":".*"}'
  rabbitmq_api PUT "/api/users/$AMQP_USER" "{\"password\":\"$AMQP_PASSWORD\",\"tags\":\"\"}" ||
    die "cannot create RabbitMQ user $AMQP_USER through $RABBITMQ_API (make up enables the management plugin)"
  rabbitmq_api PUT "/api/vhosts/$AMQP_VHOST" || die "cannot create RabbitMQ vhost $AMQP_VHOST"
  rabbitmq_api PUT "/api/permissions/$AMQP_VHOST/$AMQP_USER" "$perm" || die "cannot grant $AMQP_USER the vhost $AMQP_VHOST"
}

# delete_broker removes the vhost (with every queue in it) and the user; a 404 is fine.
delete_broker() {
  local what path code
  for what in "vhost $AMQP_VHOST" "user $AMQP_USER"; do
    path=/api/${what%% *}s/${what#* }
    code=$(curl -sS -o /dev/null -w '%{http_code}' -u guest:guest -X DELETE "$RABBITMQ_API$path" 2>/dev/null) || code=000
    [[ $RABBITMQ_API != *@* ]] || code=$(curl -sS -o /dev/null -w '%{http_code}' -X DELETE "$RABBITMQ_API$path" 2>/dev/null) || code=000
    case $code in
      2??) log "deleted RabbitMQ $what" ;;
      404) ;;
      *) log "WARNING: RabbitMQ $what not deleted (HTTP $code from $RABBITMQ_API)"; return 1 ;;
    esac
  done
}

# ---- host network ----------------------------------------------------------------------
HOST_RULES_COMMENT() { printf 'minik8s cluster %s' "$CLUSTER_ID"; }

# host_rules prints the iptables rules (table, chain, spec) this host needs for the cluster:
# with br_netfilter, frames between two nodes on the bridge pass the FORWARD chain, whose
# policy Docker sets to DROP; traffic from the nodes to elsewhere is forwarded and masqueraded
# as a router in front of a lab's machines would do.
host_rules() {
  local c
  c=$(HOST_RULES_COMMENT)
  printf '%s\n' "filter FORWARD -i $CLUSTER_BRIDGE -m comment --comment \"$c\" -j ACCEPT" \
    "filter FORWARD -o $CLUSTER_BRIDGE -m comment --comment \"$c\" -j ACCEPT" \
    "nat POSTROUTING -s $CLUSTER_SUBNET ! -o $CLUSTER_BRIDGE -m comment --comment \"$c\" -j MASQUERADE"
}

# each_host_rule add|del: add inserts the rules that are missing at the top of their chain,
# del deletes those present.
each_host_rule() {
  local action=$1 line table chain
  while IFS= read -r line; do
    eval "set -- $line"
    table=$1 chain=$2
    shift 2
    if iptables -t "$table" -C "$chain" "$@" 2>/dev/null; then
      [ "$action" != del ] || iptables -t "$table" -D "$chain" "$@"
    elif [ "$action" = add ]; then
      iptables -t "$table" -I "$chain" 1 "$@"
    fi
  done < <(host_rules)
}

ensure_host_network() {
  if ! ip link show "$CLUSTER_BRIDGE" >/dev/null 2>&1; then
    log "bridge $CLUSTER_BRIDGE with $CLUSTER_HOST_IP/24"
    ip link add "$CLUSTER_BRIDGE" type bridge
  fi
  ip -4 addr show dev "$CLUSTER_BRIDGE" | grep -q "inet $CLUSTER_HOST_IP/24" ||
    ip addr add "$CLUSTER_HOST_IP/24" dev "$CLUSTER_BRIDGE"
  ip link set "$CLUSTER_BRIDGE" up
  each_host_rule add
  if [ "$(cat /proc/sys/net/ipv4/ip_forward)" != 1 ]; then
    log "enabling IPv4 forwarding on this host (net.ipv4.ip_forward=1): the nodes reach other networks through it"
    echo 1 >/proc/sys/net/ipv4/ip_forward
  fi
}

remove_host_network() {
  each_host_rule del
  local dst via gw
  # Routes through the bridge are the cluster's (pod CIDRs via the nodes).
  while read -r dst via gw; do
    ip route del "$dst" "$via" "$gw" dev "$CLUSTER_BRIDGE" || true
  done < <(bridge_routes)
  if ip link show "$CLUSTER_BRIDGE" >/dev/null 2>&1; then
    ip link del "$CLUSTER_BRIDGE"
    log "deleted bridge $CLUSTER_BRIDGE"
  fi
}

# ---- nodes -----------------------------------------------------------------------------
valid_node_name() { [[ $1 =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]]; }

# node_load NAME sets the node's layout (NODE_*); its record exists once `node.sh add` began.
node_load() {
  NODE_NAME=$1
  NODE_DIR=$NODES_DIR/$1
  NODE_NETNS=mk8s-$CLUSTER_ID-$1
  NODE_CGROUP=/mk8s-$CLUSTER_ID-$1
  NODE_RUN=$NODE_DIR/run
  NODE_LOGS=$NODE_DIR/logs
  NODE_SOCK=$NODE_DIR/docker.sock
  NODE_CTR_SOCK=$NODE_DIR/containerd.sock
  NODE_INDEX='' NODE_IP='' NODE_VETH=''
  if [ -f "$NODE_DIR/node.env" ]; then
    # shellcheck disable=SC1091 # written by node_record
    . "$NODE_DIR/node.env"
  fi
}

node_known() { [ -f "$NODES_DIR/$1/node.env" ]; }

# node_record picks the node's index (its address is .10+index, its veth mk8s-<id>-<index>):
# the smallest one no other node has. Called with the cluster's lock held.
node_record() {
  node_load "$1"
  [ -z "$NODE_INDEX" ] || return 0
  local used=" " f idx
  for f in "$NODES_DIR"/*/node.env; do
    [ -f "$f" ] || continue
    used+="$(sed -n 's/^NODE_INDEX=//p' "$f") "
  done
  for ((idx = 1; idx <= 244; idx++)); do
    [[ $used == *" $idx "* ]] || break
  done
  ((idx <= 244)) || die "no free address on $CLUSTER_SUBNET for $1"
  NODE_INDEX=$idx
  NODE_IP=${CLUSTER_HOST_IP%.1}.$((10 + idx))
  NODE_VETH=mk8s-$CLUSTER_ID-$idx
  mkdir -p "$NODE_DIR"
  printf 'NODE_INDEX=%s\nNODE_IP=%s\nNODE_VETH=%s\nNODE_NETNS=%s\nNODE_CGROUP=%s\n' \
    "$NODE_INDEX" "$NODE_IP" "$NODE_VETH" "$NODE_NETNS" "$NODE_CGROUP" >"$NODE_DIR/node.env"
  # The identity: a name the apiserver has no kubeconfig for yet is added to --nodes.
  grep -qxF "$1" "$CLUSTER_DIR/nodes" 2>/dev/null || echo "$1" >>"$CLUSTER_DIR/nodes"
}

# in_node NAME CMD... runs CMD in the node's network namespace (nsenter --net: ip netns exec
# would remount /sys and hide the host's cgroups).
in_node() {
  local ns=$NETNS_DIR/mk8s-$CLUSTER_ID-$1
  shift
  nsenter --net="$ns" -- "$@"
}

# node_pid NAME COMPONENT prints the pid of the node's component when it runs: the pid file
# names a live process of that program inside the node's namespace.
node_pid() {
  local f=$NODES_DIR/$1/run/$2.pid comm=$2 pid
  [ "$comm" != redis ] || comm=redis-server
  [ -f "$f" ] || return 1
  pid=$(tr -dc '0-9' <"$f")
  [ -n "$pid" ] && ! exited "$pid" || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ] || return 1
  [ "$(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null)" = "$(stat -L -c %i "$NETNS_DIR/mk8s-$CLUSTER_ID-$1" 2>/dev/null)" ] || return 1
  printf '%s\n' "$pid"
}

# node_pod_cidr NAME prints the Node's spec.podCIDR, empty when it has none (yet).
node_pod_cidr() {
  { api_get "/api/v1/nodes/$1" 2>/dev/null || true; } | sed -n 's/^ *"podCIDR": *"\([^"]*\)".*/\1/p' | head -n 1
}

# bridge_routes prints "CIDR via GATEWAY" for every route through the cluster's bridge.
bridge_routes() {
  ip -4 route show dev "$CLUSTER_BRIDGE" 2>/dev/null |
    awk '{ for (i = 2; i < NF; i++) if ($i == "via") print $1, "via", $(i + 1) }'
}

# node_names prints the names of the nodes this host has a record of.
node_names() {
  local d
  for d in "$NODES_DIR"/*/; do
    [ -f "$d/node.env" ] && basename "$d"
  done
  return 0
}

# sync_routes gives this host a route to every node's pod CIDR via the node's address, and
# drops routes through the bridge to nodes that left or whose CIDR changed. A CIDR that some
# other link already routes (make up's node, say) is reported, not taken over.
sync_routes() {
  local want=" " n cidr r dst via gw
  local api=
  if apiserver_ready; then api=1; fi
  for n in $(node_names); do
    node_load "$n"
    if [ -z "$api" ]; then
      # Without the apiserver only routes to nodes that left can be judged: keep the others.
      while read -r dst via gw; do
        [ "$gw" != "$NODE_IP" ] || want+="$dst/$gw "
      done < <(bridge_routes)
      continue
    fi
    cidr=$(node_pod_cidr "$n")
    [ -n "$cidr" ] || continue
    r=$(ip -4 route show exact "$cidr" 2>/dev/null)
    if [ -n "$r" ] && [[ $r != *"dev $CLUSTER_BRIDGE"* ]]; then
      log "WARNING: $cidr (pod CIDR of $n) is already routed on this host ($r): not routed to $n"
      continue
    fi
    want+="$cidr/$NODE_IP "
    if [[ $r != *" via $NODE_IP dev $CLUSTER_BRIDGE"* ]]; then
      ip route replace "$cidr" via "$NODE_IP" dev "$CLUSTER_BRIDGE"
      log "route to $cidr via $NODE_IP ($n)"
    fi
  done
  while read -r dst via gw; do
    [[ $want == *" $dst/$gw "* ]] && continue
    ip route del "$dst" "$via" "$gw" dev "$CLUSTER_BRIDGE" && log "route to $dst via $gw removed"
  done < <(bridge_routes)
}

# ---- control plane ---------------------------------------------------------------------
# ensure_apiserver starts the apiserver with this cluster's flags, or restarts it when it runs
# with others: make up's (bound to loopback), or a --nodes list without a node just added (the
# apiserver makes node identities and kubeconfigs at start).
ensure_apiserver() {
  local pid want have
  want=$(apiserver_args)
  if pid=$(pid_of apiserver); then
    have=$(tr '\0' '\n' <"/proc/$pid/cmdline" | tail -n +2)
    if [ "$have" = "$want" ]; then
      log "apiserver already running (pid $pid)"
      wait_component apiserver
      host_kubeconfigs
      return
    fi
    log "restarting the apiserver with the cluster's flags (nodes: $APISERVER_NODES)"
    stop_component apiserver
  fi
  local port
  for port in "$APISERVER_PORT" "$ETCD_CLIENT_PORT" "$ETCD_PEER_PORT"; do
    if [ "$port" = "$APISERVER_PORT" ] || [ -z "$ETCD_SERVERS" ]; then
      ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null ||
        die "port $port is taken (make up's apiserver from another MINIK8S_HOME?): make down, or set APISERVER_PORT, ETCD_CLIENT_PORT and ETCD_PEER_PORT"
    fi
  done
  start_component apiserver
  wait_component apiserver
  host_kubeconfigs
}

# host_kubeconfigs copies the kubeconfigs of this host's components naming the apiserver at
# the bridge address: those in $MINIK8S_HOME/kubeconfigs are never rewritten and may name an
# address or port an earlier make up gave the apiserver.
host_kubeconfigs() {
  local c
  mkdir -p "$CLUSTER_DIR/kubeconfigs"
  for c in scheduler controller-manager kubeproxy serverless; do
    node_kubeconfig "$MINIK8S_HOME/kubeconfigs/$c.kubeconfig" "$CLUSTER_DIR/kubeconfigs/$c.kubeconfig"
  done
  node_kubeconfig "$MINIK8S_HOME/kubeconfig" "$CLUSTER_DIR/kubeconfig"
}

# node_kubeconfig SRC DST copies a kubeconfig the apiserver wrote, naming the apiserver at the
# bridge address: one written by make up names 127.0.0.1, which is a node's own loopback.
node_kubeconfig() {
  sed "s#^\( *server: \).*#\1https://$CLUSTER_HOST_IP:$APISERVER_PORT#" "$1" >"$2.tmp"
  chmod 600 "$2.tmp"
  mv "$2.tmp" "$2"
}
