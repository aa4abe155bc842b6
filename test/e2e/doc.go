// Package e2e holds the end-to-end tests of the control plane: they build the real apiserver
// and our kubectl, run the apiserver as a process on free ports with its own state directory,
// and drive it with both our kubectl and the real one, checking the RabbitMQ bus on the side.
// Everything lives in _test.go files; this file only names the package.
package e2e
