// Package rules computes kubeproxy's whole iptables ruleset from the service ports of the
// catalog, as a pure function, and writes it as an iptables-restore payload that replaces
// kubeproxy's own chains (all named MINIK8S-...) and nothing else. The chains and rules follow
// Kubernetes' kube-proxy in iptables mode; rules are written the way iptables-save prints
// them, so what is read back can be compared with what was written.
package rules
