#!/usr/bin/env bash
# make reset: after make down, delete the cluster's RabbitMQ vhost (with its queues) and its
# state directory. A new make up then starts a new cluster from nothing.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

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
