package storage

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strconv"
)

// Errors every implementation returns, matched with errors.Is.
var (
	ErrKeyNotFound = errors.New("key not found")
	ErrKeyExists   = errors.New("key exists")
	// ErrRevisionMismatch means a guarded write found another revision than expected.
	ErrRevisionMismatch = errors.New("revision mismatch")
	// ErrCompacted means the revision asked for is no longer retained.
	ErrCompacted = errors.New("revision compacted")
)

// KV is one stored value and the revisions that created and last modified it.
type KV struct {
	Key            string
	Value          []byte
	CreateRevision int64
	ModRevision    int64
}

// ListResult is one page of a range read.
type ListResult struct {
	KVs []KV
	// Revision is the store revision the page was read at.
	Revision int64
	// More is true when keys after the last returned one remain in the range.
	More bool
}

// EventType says what happened to a key.
type EventType int

// The kinds of change a watch reports.
const (
	Put EventType = iota
	Delete
)

// Event is one change seen by a watch. For deletes, KV holds the last value and Revision the
// revision of the delete.
type Event struct {
	Type     EventType
	KV       KV
	PrevKV   *KV
	Revision int64
	Created  bool
}

// WatchResult is either a batch of events or a terminal error (ErrCompacted or a transport error).
type WatchResult struct {
	Events []Event
	Err    error
}

// Interface is what the apiserver needs from a store.
type Interface interface {
	Get(ctx context.Context, key string) (KV, error)
	// List reads keys in [from, end of prefix) at revision rev (0: latest), at most limit (0: all).
	List(ctx context.Context, prefix, from string, limit, rev int64) (ListResult, error)
	// Create writes key only if it does not exist; it returns the new revision.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// Update writes key only if its mod revision is still expected; on mismatch it returns
	// ErrRevisionMismatch (or ErrKeyNotFound when the key is gone).
	Update(ctx context.Context, key string, value []byte, expected int64) (int64, error)
	// Delete removes key only if its mod revision is still expected (0: any); it returns the
	// deleted value and the delete's revision.
	Delete(ctx context.Context, key string, expected int64) (KV, int64, error)
	// Watch streams changes under prefix after revision rev (0: from now). The channel closes
	// when ctx ends or after a terminal error.
	Watch(ctx context.Context, prefix string, rev int64) <-chan WatchResult
	// Revision is the store's current revision.
	Revision(ctx context.Context) (int64, error)
	// Compact discards history before rev.
	Compact(ctx context.Context, rev int64) error
}

// metadataOpen is where a stored object's metadata begins. Objects are stored as JSON of the
// typed Go structs, which put type meta first, so it is the first occurrence in the value.
// Custom objects are JSON of maps, keys sorted: apiVersion, kind, then metadata, which is
// the first occurrence when nothing but those two strings comes before it.
var metadataOpen = []byte(`"metadata":{`)

// sortedTypeMeta is how a custom object's stored JSON starts before its metadata.
var sortedTypeMeta = regexp.MustCompile(`^\{"apiVersion":"[^"\\]*","kind":"[^"\\]*",$`)

// WithResourceVersion returns a stored value with metadata.resourceVersion set to rev (values
// are stored without it: it is the revision, known only after the write), without decoding
// it. ok is false for a value not in the stored shape; callers then decode it.
func WithResourceVersion(stored []byte, rev int64) (out []byte, ok bool) {
	i := bytes.Index(stored, metadataOpen)
	if i < 0 || !(bytes.HasPrefix(stored, []byte(`{"kind":`)) || sortedTypeMeta.Match(stored[:i])) {
		return nil, false
	}
	i += len(metadataOpen)
	field := `"resourceVersion":"` + strconv.FormatInt(rev, 10) + `"`
	if i < len(stored) && stored[i] != '}' {
		field += ","
	}
	out = make([]byte, 0, len(stored)+len(field))
	out = append(out, stored[:i]...)
	out = append(out, field...)
	return append(out, stored[i:]...), true
}
