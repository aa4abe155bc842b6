// Package openapi generates the OpenAPI documents the apiserver serves: v3 per group version
// under /openapi/v3, and one v2 (Swagger 2.0) document for all of them at /openapi/v2, in JSON
// and protobuf. Both have the same Kubernetes-style paths; the built-in kinds' schemas are
// reflected from their Go types once at start, custom resources' come from their
// CustomResourceDefinitions and are made again when those change (Live). The real kubectl
// reads v3 to decide that the server validates fields itself (so `kubectl apply` needs no
// --validate=false) and to answer `kubectl explain`; Helm, client-go's OpenAPISchema and
// kubectl's client-side validation read v2.
package openapi
