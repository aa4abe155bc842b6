// Package app wires kubeproxy: bus-fed caches of Services, EndpointSlices and Ingresses, one
// loop that turns them into the iptables ruleset, the DNS zone and the hosts file block, the
// DNS server, and the metrics endpoint.
package app
