// Package server is the apiserver's HTTP layer: Kubernetes REST paths on Gin, content
// negotiation (JSON, YAML bodies, server-side Tables), discovery, watch streams, the generic
// create/read/update/patch/delete flow over storage.Interface, and the status, binding and scale
// subresources.
package server
