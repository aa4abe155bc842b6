// Package kubernetesservice keeps the kubernetes Service in the default namespace, through
// which pods reach the API, and its Endpoints and EndpointSlice: every apiserver renews a Lease
// in kube-system naming the address it serves at, and writes as endpoints the apiservers whose
// Lease is current, so several apiservers each add themselves and drop the ones that stopped.
package kubernetesservice
