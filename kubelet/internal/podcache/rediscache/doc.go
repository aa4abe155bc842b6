// Package rediscache implements podcache.Cache on Redis.
//
// Layout: each node owns two hashes under its prefix (NodePrefix gives
// "minik8s:kubelet:<node>:"):
//
//	<prefix>pods  field "<namespace>/<name>" -> the pod as Kubernetes JSON
//	<prefix>rvs   field "<namespace>/<name>" -> that pod's resourceVersion
//
// Hashes rather than a key per pod because List is then one HGETALL, consistent and without
// SCAN, and a node's whole cache goes with two DELs. The resourceVersions sit apart from the
// JSON so the Lua script that guards Put compares them without decoding pods; the script runs
// atomically, so concurrent Puts can never store an older pod over a newer one.
package rediscache
