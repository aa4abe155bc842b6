// Package cli is our kubectl's command tree (cobra): apply, create (from files, and the
// role, clusterrole, rolebinding, clusterrolebinding and token subcommands), get, describe,
// delete, patch, logs, auth can-i and whoami, version and api-resources, speaking to the
// apiserver through shared/client as the user, or as whom --as names; exec, attach, cp and
// port-forward stream through client-go's WebSocket and SPDY clients.
package cli
