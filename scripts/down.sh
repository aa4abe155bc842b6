#!/usr/bin/env bash
# make down: stop the components make up started (SIGTERM, then SIGKILL after a grace period).
# Data in $MINIK8S_HOME stays; RabbitMQ, Redis and Docker are system services and keep running.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
  stop_component "${COMPONENTS[i]}"
done
log "stopped; data kept in $MINIK8S_HOME (make reset deletes it)"
if [ -f "$MINIK8S_HOME/cluster/env" ]; then
  log "the nodes of make cluster keep running: make cluster-down removes them, make cluster starts the control plane again"
fi
