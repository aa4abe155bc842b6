// Package app assembles the dashboard: clients of the apiserver and Prometheus, and the HTTP
// server, stopped in order when the context ends.
package app
