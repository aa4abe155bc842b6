package load

import "sync/atomic"

// sink receives the busy loop's result so the compiler cannot drop the loop as dead code.
var sink atomic.Uint64
