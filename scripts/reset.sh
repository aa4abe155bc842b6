#!/usr/bin/env bash
# make reset: after make down, remove make cluster's nodes if any, delete the cluster's RabbitMQ
# vhost (with its queues) and its state directory. A new make up then starts a new cluster from
# nothing.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# make cluster's nodes and network go first: their state is under $MINIK8S_HOME.
if [ -f "$MINIK8S_HOME/cluster/env" ]; then
  "$(dirname "$0")/cluster.sh" down
fi

if [ -s "$MINIK8S_HOME/cluster-id" ]; then
  vhost=$(cluster_vhost)
  if rabbitmq_api DELETE "/api/vhosts/$vhost" 2>/dev/null; then
    log "deleted RabbitMQ vhost $vhost"
  else
    log "RabbitMQ vhost $vhost not deleted (already gone, or RabbitMQ is not running)"
  fi
fi
rm -rf -- "$MINIK8S_HOME"
log "deleted $MINIK8S_HOME"
