// Package defaults fills in the fields Kubernetes defaults when an object is created or
// replaced, so that validation, storage and every consumer see the same fully specified object
// that a real apiserver would hand back. Each kind with defaults has its function here (Pod,
// Service, ...), which the kind's registration in the registry names; each is idempotent:
// applying it to its own output changes nothing. The Keep functions carry what the server set
// into an update that leaves it out.
package defaults
