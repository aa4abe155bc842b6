// Package controller reconciles EchoApps: it decides, with pure functions, the Deployment,
// Service and status an EchoApp should have (desired.go), and the reconciler makes the
// cluster match (reconciler.go).
package controller
