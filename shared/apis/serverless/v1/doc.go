// Package v1 holds the serverless.minik8s.io/v1 API types: Function, Workflow and
// WorkflowExecution.
package v1
