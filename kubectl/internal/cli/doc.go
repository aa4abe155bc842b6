// Package cli is our kubectl's command tree (cobra): apply, create, get, describe, delete,
// patch, logs, version and api-resources, speaking to the apiserver through shared/client.
package cli
