// Package kubeconfig reads and writes kubeconfig files in the standard format, so our own
// components and the real kubectl share one file without pulling in client-go.
package kubeconfig
