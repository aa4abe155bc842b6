// Package framework holds the scheduler's decisions as pure functions: filters that say why a
// node cannot take a pod, the "0/N nodes are available" message built from their reasons, and
// the scoring strategies that pick one node among those left. Nothing here talks to a server.
package framework
