// Package cgroups reads what the kernel accounts for a control group (CPU time, memory, tasks,
// block I/O) under cgroup v1 or v2, and the per-namespace and machine-wide counters under
// /proc (network interfaces, CPU time, memory), from roots a test can point at a fake tree.
package cgroups
