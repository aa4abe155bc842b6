// Package leaderelection lets one of several replicas of a component act at a time: replicas
// compete for a coordination.k8s.io Lease through the apiserver, the holder renews it, and a
// replica that cannot renew within its deadline stops acting before another may take over.
package leaderelection
