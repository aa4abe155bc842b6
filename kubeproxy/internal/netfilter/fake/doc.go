// Package fake is an in-memory netfilter.Interface for tests. It records every payload
// restored and every jump rule ensured (as Kubernetes' fake iptables records its restore
// payload), and keeps the chains a real kernel would hold, so a test can read back what its
// code left behind. It can be told to fail.
package fake
