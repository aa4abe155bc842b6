// Package echo answers HTTP requests with who served them (hostname, pod IP, pod and node names)
// and what was asked, so tests can tell which pod behind a Service answered.
package echo
