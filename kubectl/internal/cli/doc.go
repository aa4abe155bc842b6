// Package cli is our kubectl's command tree (cobra): apply, create, get, describe, delete,
// patch, logs, version and api-resources, speaking to the apiserver through shared/client;
// exec, attach, cp and port-forward stream through client-go's WebSocket and SPDY clients.
package cli
