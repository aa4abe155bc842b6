package nodenet

// ErrNotSynced is errNotSynced for the external tests: a sync before the node cache listed
// must say so, not change anything.
var ErrNotSynced = errNotSynced
