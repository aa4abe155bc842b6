// Package fake is an in-memory client.Writer for controllers' unit tests: it stores objects by
// namespace and name with resourceVersions, answers with the apiserver's errors (AlreadyExists,
// NotFound, Conflict on a stale resourceVersion or a failed precondition), applies JSON merge
// patches, records every call, and fails a call on purpose when a test asks.
package fake
