// Package deployment is the Deployment controller: it keeps one ReplicaSet per pod template a
// Deployment has had, named after the template's hash, and moves replicas from the old ones to
// the new one by its strategy (RollingUpdate within maxSurge and maxUnavailable, or Recreate);
// numbers revisions, cleans up history beyond revisionHistoryLimit, honours paused, and reports
// status and the Progressing and Available conditions as Kubernetes does. Each step is a pure
// function (fenceposts.go, revision.go, rolling.go, status.go, plan.go); controller.go applies
// the plan.
package deployment
