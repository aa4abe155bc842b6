package volume

import "k8s.io/apimachinery/pkg/runtime"

// Recorder reports events; shared/record's Recorder and Fake satisfy it.
type Recorder interface {
	Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any)
}
