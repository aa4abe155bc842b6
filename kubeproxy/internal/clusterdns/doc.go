// Package clusterdns is the cluster's DNS server, one per node: it answers names in the
// cluster domain (Services, headless Services' endpoints, SRV records of named ports, pods)
// and Ingress hosts from a snapshot of the caches, and forwards every other name to the
// node's upstream resolvers. The snapshot (Zone) and the answers are pure; the server and the
// forwarder are the parts that touch sockets.
package clusterdns
