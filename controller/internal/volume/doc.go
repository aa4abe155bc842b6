// Package volume is the PersistentVolume controller: it binds claims to volumes as
// Kubernetes' binder does, provisions directory-backed volumes for claims of a class whose
// provisioner is ours, and reclaims volumes whose claims are gone.
package volume
