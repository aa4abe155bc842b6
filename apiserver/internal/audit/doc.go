// Package audit records who did what to the API, as Kubernetes' audit log does: a policy in
// the audit.k8s.io/v1 format says at which level each request is recorded (None, Metadata,
// Request, RequestResponse) and which stages are left out; events are written as JSON lines,
// one per stage, to a file rotated by size.
package audit
