package printer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Typed prints one object of a k8s.io/api type as kubectl prints what its create commands
// build or get back: json in the type's field order, or yaml with sorted keys. An object
// never stored (no creationTimestamp) shows `creationTimestamp: null`, as the real kubectl's
// v1.32 types do.
func Typed(w io.Writer, format string, obj runtime.Object) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode %s: %w", format, err)
	}
	if m, err := meta.Accessor(obj); err == nil && m.GetCreationTimestamp().Time.IsZero() {
		if data, err = withNullCreationTimestamp(data); err != nil {
			return err
		}
	}
	switch format {
	case "json":
		var b bytes.Buffer
		if err := json.Indent(&b, data, "", "    "); err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		b.WriteByte('\n')
		_, err = w.Write(b.Bytes())
		return err
	case "yaml":
		out, err := yaml.JSONToYAML(data)
		if err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
		_, err = w.Write(out)
		return err
	}
	return fmt.Errorf("unable to match a printer suitable for the output format %q", format)
}

// field is one member of a JSON object, kept in the order it was written.
type field struct {
	key   string
	value json.RawMessage
}

// metaBeforeTimestamp are the ObjectMeta fields that come before creationTimestamp.
var metaBeforeTimestamp = map[string]bool{
	"name": true, "generateName": true, "namespace": true, "selfLink": true,
	"uid": true, "resourceVersion": true, "generation": true,
}

// withNullCreationTimestamp adds "creationTimestamp": null to the object's metadata where
// ObjectMeta's field order puts it, keeping every other field where it was.
func withNullCreationTimestamp(data []byte) ([]byte, error) {
	top, err := fields(data)
	if err != nil {
		return nil, err
	}
	for i, f := range top {
		if f.key != "metadata" {
			continue
		}
		md, err := fields(f.value)
		if err != nil {
			return nil, err
		}
		at := 0
		for at < len(md) && metaBeforeTimestamp[md[at].key] {
			at++
		}
		md = append(md[:at], append([]field{{key: "creationTimestamp", value: json.RawMessage("null")}}, md[at:]...)...)
		top[i].value = object(md)
		return object(top), nil
	}
	return data, nil
}

func fields(data []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("decode object: not a JSON object")
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("decode object: %w", err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("decode object: %w", err)
		}
		out = append(out, field{key: key, value: v})
	}
	return out, nil
}

func object(fs []field) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
