// Package fake is an in-memory runtime.Runtime for unit tests of the kubelet. It keeps Docker's
// semantics (states, exit codes, labels, images, stop grace, logs, exec) without a daemon, lets a
// test drive what containers do (Exit, WriteLog, SetStats, SetExec, FailNext, or a Program that
// simulates the container's process), and records every call for assertions.
package fake
