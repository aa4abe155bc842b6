package setup

import (
	"encoding/json"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/bus"
)

// Deletions hands the bus's reports of deleted custom objects to the controllers that asked:
// the informer factory caches only the kinds of the scheme, and drops the rest. The garbage
// collector learns this way that an owner of a custom kind is gone.
type Deletions struct {
	mu       sync.RWMutex
	handlers []func(resource string, obj *metav1.PartialObjectMetadata)
}

// Subscribe adds h, called with the resource (plural.group) and the deleted object's metadata.
func (d *Deletions) Subscribe(h func(resource string, obj *metav1.PartialObjectMetadata)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.handlers = append(d.handlers, h)
}

// Observe passes del on to the subscribers when it reports the deletion of a custom object:
// one whose resource is named plural.group, as no built-in plural is. It never fails (the bus
// consumes without acknowledgements): an undecodable message is dropped, and the collector's
// resync repairs what it meant.
func (d *Deletions) Observe(del bus.Delivery) {
	resource := del.Resource()
	if !strings.Contains(resource, ".") {
		return
	}
	d.mu.RLock()
	handlers := d.handlers
	d.mu.RUnlock()
	if len(handlers) == 0 {
		return
	}
	var ev struct {
		Type   string                       `json:"type"`
		Object metav1.PartialObjectMetadata `json:"object"`
	}
	if err := json.Unmarshal(del.Body, &ev); err != nil || ev.Type != bus.Deleted || ev.Object.UID == "" {
		return
	}
	for _, h := range handlers {
		h(resource, &ev.Object)
	}
}
