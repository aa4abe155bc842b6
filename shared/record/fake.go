package record

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// Fake is a recorder for tests of code that reports events: each event becomes the string
// "<type> <reason> <message>" on Events, dropped if the channel is full.
type Fake struct {
	Events chan string
}

// NewFake returns a Fake that holds up to size events.
func NewFake(size int) *Fake { return &Fake{Events: make(chan string, size)} }

func (f *Fake) Event(obj runtime.Object, eventType, reason, message string) {
	f.Eventf(obj, eventType, reason, "%s", message)
}

func (f *Fake) Eventf(_ runtime.Object, eventType, reason, messageFmt string, args ...any) {
	select {
	case f.Events <- eventType + " " + reason + " " + fmt.Sprintf(messageFmt, args...):
	default:
	}
}
