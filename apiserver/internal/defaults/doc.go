// Package defaults fills in the fields Kubernetes defaults when an object is created or
// replaced, so that validation, storage and every consumer see the same fully specified object
// that a real apiserver would hand back.
package defaults
