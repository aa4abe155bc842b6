// Package ingress is the Ingress controller: it renders the networking.k8s.io/v1 Ingresses of
// its class into one nginx configuration (Resolve and Render, pure), keeps the nginx pods that
// serve it running behind the ingress-nginx Service, delivers the configuration to each pod and
// reloads it gracefully, and reports the Service's ClusterIP in every Ingress's status.
package ingress
