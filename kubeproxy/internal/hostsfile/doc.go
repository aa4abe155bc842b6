// Package hostsfile keeps a block of Ingress hosts in the node's /etc/hosts, so that the node
// itself (curl http://<host>/ on a node) resolves them like pods do through cluster DNS. The
// block is computed by a pure function; writing takes a lock and compares first, because
// several kubeproxies on one machine (the nodes of `make cluster`) share one /etc/hosts and
// write the same block.
package hostsfile
