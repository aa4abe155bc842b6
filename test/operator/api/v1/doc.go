// Package v1 holds the Go types of demo.minik8s.io/v1, the EchoApp custom resource; the
// CustomResourceDefinition in the chart's crds/ directory describes the same fields.
package v1
