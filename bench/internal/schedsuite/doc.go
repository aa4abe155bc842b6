// Package schedsuite measures scheduling throughput on hollow nodes: a private apiserver, a
// hollow-node process simulating many Nodes, and the real scheduler binary. The baseline in
// the same run binds the same number of pods to random nodes straight through the binding API,
// the ceiling the store allows; the report gives both and their ratio.
package schedsuite
