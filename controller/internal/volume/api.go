package volume

import "minik8s.io/shared/record"

// Recorder reports events (shared/record's Recorder, or its Fake in tests).
type Recorder = record.EventRecorder
