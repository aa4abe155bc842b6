// Package authorizer decides who may do what to which object, as Kubernetes' authorization
// layer does: it derives a request's attributes from its URL and method, runs them through a
// chain of authorizers (the node authorizer and RBAC live in subpackages), and words a refusal
// as Kubernetes' 403 does. It also says which checks an impersonating request must pass and
// who the request then acts as. It holds no server code: the apiserver wires it in.
package authorizer
