// Package catalog turns Services and EndpointSlices into what kubeproxy acts on: each service
// port with the endpoints traffic may go to, chosen as Kubernetes' kube-proxy chooses them. It
// is pure: the iptables ruleset and the DNS records are both built from its output.
package catalog
