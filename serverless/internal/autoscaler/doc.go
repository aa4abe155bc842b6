// Package autoscaler scales functions on their calls, as Knative's pod autoscaler does: the
// in-flight calls (and the call rate) every gateway counted, averaged over a stable window and
// a panic window, against a per-pod target; scale to zero after an idle window; one pod at
// once when a call arrives at zero. Decide is the pure decision; Autoscaler applies it to
// every Function through its Deployment's scale subresource.
package autoscaler
