// Package rootcacert is the root CA publisher: every active namespace holds a ConfigMap
// kube-root-ca.crt whose ca.crt is the CA that signs the apiserver's certificate (the one the
// controller-manager itself trusts), so pods can verify the API they reach in the cluster; the
// ServiceAccount volume projects it. Decide says what one namespace needs (pure); the
// controller makes it so, as Kubernetes' root-ca-cert-publisher does.
package rootcacert
