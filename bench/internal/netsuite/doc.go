// Package netsuite measures Service traffic and cluster DNS on the cluster make up runs:
// connection latency and throughput to a pod through its Service's ClusterIP against the pod
// IP directly, and DNS through the cluster's resolver against the node's upstream, each pair
// interleaved in one run, from the host and from a pod's network namespace.
package netsuite
