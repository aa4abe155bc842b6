// Package validation checks objects of every served kind before they are stored, reporting
// problems as a field.ErrorList whose paths and error types match what Kubernetes reports, so
// the apiserver can answer 422 Invalid with the causes kubectl users already know.
package validation
