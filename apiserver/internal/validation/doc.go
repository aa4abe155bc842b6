// Package validation checks objects of every served kind before they are stored, reporting
// problems as a field.ErrorList whose paths and error types match what Kubernetes reports, so
// the apiserver can answer 422 Invalid with the causes kubectl users already know. Each served
// kind's Rules are here (Pod, Service, ...), and the kind's registration in the registry names
// them.
package validation
