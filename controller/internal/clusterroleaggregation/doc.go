// Package clusterroleaggregation is the ClusterRole aggregation controller: a ClusterRole with
// an aggregationRule grants the rules of every other ClusterRole its selectors match, so that
// admin, edit and view pick up what a new kind's roles labelled aggregate-to-* allow. Rules
// computes them (pure); the controller writes them only when they differ, as Kubernetes'
// clusterrole-aggregation controller does.
package clusterroleaggregation
