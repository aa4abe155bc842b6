// Package history keeps the ControllerRevisions of DaemonSets and StatefulSets: the templates
// a controller has run, named and hashed as Kubernetes names and hashes them, so that
// kubectl rollout history and undo read them as they read a Kubernetes cluster's.
package history
