// Package endpointslice is the EndpointSlice controller: for every Service with a selector,
// discovery.k8s.io/v1 EndpointSlices (what kubeproxy and current clients read) listing its
// pods with ready, serving and terminating conditions, at most MaxEndpointsPerSlice each.
// Plan computes the creates, updates and deletes (pure, stable: endpoints stay in the slice
// they are in); the controller applies them and waits for its own writes to reach the cache.
package endpointslice
