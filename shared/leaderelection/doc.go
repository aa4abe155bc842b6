// Package leaderelection lets one of several replicas of a component act at a time, the way
// client-go's tools/leaderelection does: candidates compete for a coordination.k8s.io/v1 Lease
// through the apiserver, the holder renews it, others take it over once it has gone unrenewed
// for its duration as measured on their own clocks, and a holder that cannot renew within its
// RenewDeadline stops acting before anyone else may start.
package leaderelection
