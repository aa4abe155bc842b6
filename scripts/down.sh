#!/usr/bin/env bash
# make down: stop the components make up started (SIGTERM, then SIGKILL after a grace period).
# Data in $MINIK8S_HOME stays; RabbitMQ, Redis and Docker are system services and keep running.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

GRACE=${GRACE:-20}

stop_component() {
  local name=$1 pid i
  if ! pid=$(pid_of "$name"); then
    rm -f "$RUN_DIR/$name.pid"
    return
  fi
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < GRACE * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name did not stop in ${GRACE}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN_DIR/$name.pid"
}

for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
  stop_component "${COMPONENTS[i]}"
done
log "stopped; data kept in $MINIK8S_HOME (make reset deletes it)"
