#!/usr/bin/env bash
# The monitoring stack (configs/monitoring): Prometheus with Kubernetes service discovery,
# node-exporter on every node and the dashboard, in namespace minik8s-monitoring. make up and
# make cluster run `install` unless MINIK8S_MONITORING=0.
#
#   scripts/monitoring.sh install     apply it, with the Endpoints of the control plane's
#                                     components, and wait until Prometheus is ready
#   scripts/monitoring.sh uninstall   delete it (its data claim included)
#   scripts/monitoring.sh url         print the dashboard's URL (NodePort 30300 of a Ready node)
#   scripts/monitoring.sh render      print the manifests install applies
#
# KUBECONFIG_FILE names the kubeconfig (default: $MINIK8S_HOME/kubeconfig, the admin's).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

KUBECONFIG_FILE=${KUBECONFIG_FILE:-$MINIK8S_HOME/kubeconfig}
NS=minik8s-monitoring
kctl() { "$BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# components_manifest ADDRESS prints the Service (no selector) and Endpoints through which
# Prometheus finds the scheduler, controller-manager and serverless: they are processes of the
# control plane's host, not pods, so nothing else would list them. Each port's name is the job.
components_manifest() {
  cat <<YAML
apiVersion: v1
kind: Service
metadata:
  name: minik8s-components
  namespace: $NS
  labels: {app.kubernetes.io/part-of: minik8s-monitoring}
spec:
  clusterIP: None
  ports:
    - {name: scheduler, port: 10251, targetPort: 10251}
    - {name: controller-manager, port: 10252, targetPort: 10252}
    - {name: serverless, port: 10253, targetPort: 10253}
---
apiVersion: v1
kind: Endpoints
metadata:
  name: minik8s-components
  namespace: $NS
  labels: {app.kubernetes.io/part-of: minik8s-monitoring}
subsets:
  - addresses: [{ip: "$1"}]
    ports:
      - {name: scheduler, port: 10251}
      - {name: controller-manager, port: 10252}
      - {name: serverless, port: 10253}
YAML
}

# render prints configs/monitoring as install applies it. Prometheus' pod template carries a
# hash of its configuration and rules, so a change to either replaces the pod (it reads them
# at start) and an unchanged install leaves it be.
render() {
  local hash f
  hash=$(cat "$ROOT"/configs/monitoring/2[0-9]-prometheus-*.yaml | sha256sum | cut -c1-16)
  for f in "$ROOT"/configs/monitoring/*.yaml; do
    cat "$f"
    printf '\n---\n'
  done | sed "s|^\( *minik8s.io/config-hash:\).*|\1 \"$hash\"|"
}

install() {
  [ -x "$BIN_DIR/kubectl" ] || die "no $BIN_DIR/kubectl (make build)"
  local address=$METRICS_HOST
  case $address in
    127.* | 0.0.0.0 | "") die "the components' metrics listen on $address, which pods cannot reach; set METRICS_HOST to an address of this host" ;;
  esac
  log "monitoring: applying configs/monitoring (namespace $NS)"
  render | kctl apply -f - >/dev/null || die "kubectl apply -f configs/monitoring failed"
  components_manifest "$address" | kctl apply -f - >/dev/null || die "applying the components' Endpoints failed"
  kctl -n "$NS" rollout status deployment/prometheus --timeout=180s >/dev/null ||
    die "Prometheus is not ready after 3 minutes (kubectl -n $NS describe pod -l app.kubernetes.io/name=prometheus)"
  log "monitoring: Prometheus ready (kubectl port-forward -n $NS svc/prometheus 9090)"
  kctl -n "$NS" rollout status deployment/dashboard --timeout=120s >/dev/null ||
    die "the dashboard is not ready after 2 minutes (kubectl -n $NS describe pod -l app.kubernetes.io/name=dashboard)"
  log "monitoring: dashboard ready at $(url)"
}

# url prints http://<InternalIP>:<nodePort>/ of the dashboard's Service on the first Ready node
# (any node with an InternalIP while none is Ready, as right after a restart: every node
# serves a NodePort).
url() {
  local port ip
  port=$(kctl -n "$NS" get service dashboard -o jsonpath='{.spec.ports[0].nodePort}') || die "no Service $NS/dashboard (scripts/monitoring.sh install)"
  ip=$(kctl get nodes -o jsonpath='{range .items[*]}{range .status.conditions[?(@.type=="Ready")]}{.status}{end} {range .status.addresses[?(@.type=="InternalIP")]}{.address}{end}{"\n"}{end}' |
    awk '$2 == "" { next } $1 == "True" { print $2; found = 1; exit } !any { any = $2 } END { if (!found && any) print any }')
  [ -n "$ip" ] || die "no node with an InternalIP"
  printf 'http://%s:%s/\n' "$ip" "$port"
}

uninstall() {
  kctl delete -f "$ROOT/configs/monitoring/" --ignore-not-found --wait=true >/dev/null || die "kubectl delete -f configs/monitoring failed"
}

case "${1:-}" in
  install) install ;;
  render) render ;;
  uninstall) uninstall ;;
  url) url ;;
  *) sed -n 's/^#   //p' "$0" >&2; exit 2 ;;
esac
