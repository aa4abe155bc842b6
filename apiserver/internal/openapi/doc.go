// Package openapi generates, once at start, the OpenAPI v3 documents the apiserver serves
// under /openapi/v3: schemas reflected from the Go types and Kubernetes-style paths. The real
// kubectl reads them to decide that the server validates fields itself (so `kubectl apply`
// needs no --validate=false) and to answer `kubectl explain`.
package openapi
