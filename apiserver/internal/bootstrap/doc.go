// Package bootstrap prepares the apiserver's state directory on first start: the cluster CA,
// the serving certificate, the ServiceAccount token signing key, the static token file and a
// kubeconfig for the admin, for each component and for each node. It is idempotent and never
// replaces credentials that exist, so restarting the apiserver keeps every issued kubeconfig
// and ServiceAccount token valid.
package bootstrap
