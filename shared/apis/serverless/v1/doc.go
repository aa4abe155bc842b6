// Package v1 holds the serverless.minik8s.io/v1 API types: Function and Workflow.
package v1
