package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/bus"
)

// parseKey splits "<prefix><resource>/<namespace>/<name>" or, for
// cluster-scoped resources, "<prefix><resource>/<name>".
func parseKey(prefix, key string) (resource, namespace, name string, err error) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", "", "", fmt.Errorf("key %q is not under %q", key, prefix)
	}
	parts := strings.Split(rest, "/")
	for _, p := range parts {
		if p == "" {
			return "", "", "", fmt.Errorf("key %q has an empty segment", key)
		}
	}
	switch len(parts) {
	case 2:
		return parts[0], "", parts[1], nil
	case 3:
		return parts[0], parts[1], parts[2], nil
	}
	return "", "", "", fmt.Errorf("key %q is not <resource>/[<namespace>/]<name>", key)
}

// toMessage turns one etcd event into the bus message for it.
func toMessage(prefix string, ev *clientv3.Event) (bus.Message, error) {
	key := string(ev.Kv.Key)
	resource, namespace, name, err := parseKey(prefix, key)
	if err != nil {
		return bus.Message{}, err
	}
	rev := ev.Kv.ModRevision
	var typ string
	var value, prev []byte
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		typ = bus.Deleted
		if ev.PrevKv == nil {
			return bus.Message{}, errors.New("delete without previous value")
		}
		value = ev.PrevKv.Value
	case ev.IsCreate():
		typ, value = bus.Added, ev.Kv.Value
	default:
		typ, value = bus.Modified, ev.Kv.Value
		if ev.PrevKv != nil {
			prev = ev.PrevKv.Value
		}
	}
	obj, ok := storage.WithResourceVersion(value, rev)
	if !ok {
		if obj, err = withResourceVersion(value, rev); err != nil {
			return bus.Message{}, err
		}
	}
	// The envelope is written by hand: obj is JSON etcd holds, re-encoding it would only
	// cost a second parse per change.
	body := make([]byte, 0, len(obj)+32)
	body = append(body, `{"type":"`...)
	body = append(body, typ...)
	body = append(body, `","object":`...)
	body = append(body, obj...)
	body = append(body, '}')
	rv := strconv.FormatInt(rev, 10)
	return bus.Message{
		// Routing compares the stored values, both without a resourceVersion.
		RoutingKey: bus.RoutingKey(resource, namespace, name, value, prev, typ),
		ID:         key + "@" + rv,
		Body:       body,
		Headers: map[string]string{
			bus.HeaderResource:        resource,
			bus.HeaderNamespace:       namespace,
			bus.HeaderName:            name,
			bus.HeaderResourceVersion: rv,
		},
	}, nil
}

// withResourceVersion sets metadata.resourceVersion in a value of any shape (the slow path of
// storage.WithResourceVersion). Fields stay raw so that numbers and unknown fields pass
// through untouched.
func withResourceVersion(value []byte, rev int64) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil {
		return nil, fmt.Errorf("decode stored object: %w", err)
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := obj["metadata"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("decode stored metadata: %w", err)
		}
	}
	meta["resourceVersion"] = json.RawMessage(strconv.Quote(strconv.FormatInt(rev, 10)))
	rawMeta, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	obj["metadata"] = rawMeta
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode object: %w", err)
	}
	return out, nil
}
