// Package serviceaccount issues and checks ServiceAccount tokens as Kubernetes does: RS256 JWTs
// with the kubernetes.io claim binding them to a ServiceAccount and optionally to a Pod, Secret
// or Node, the TokenRequest and TokenReview APIs built on them, and the OIDC discovery
// documents that let others verify them. It holds no server wiring: callers supply the objects
// a token refers to through Getter and serve the results.
package serviceaccount
