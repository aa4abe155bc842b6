package scheme

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// MarshalContent encodes an unstructured object's content (maps, slices, strings, int64,
// float64, bools and nulls, as JSON decoding leaves them) to exactly the bytes json.Marshal
// gives, keys sorted, without reflection: objects of custom resources are stored, sent and
// answered in this form, and json.Marshal of an *unstructured.Unstructured encodes it twice
// (its MarshalJSON, then a compaction of the result). Values of other types are encoded by
// json.Marshal.
func MarshalContent(v any) ([]byte, error) {
	return appendContent(make([]byte, 0, 512), v)
}

// MarshalUnstructured is json.Marshal of u, through MarshalContent.
func MarshalUnstructured(u *unstructured.Unstructured) ([]byte, error) {
	return MarshalContent(u.Object)
}

// MarshalJSON is json.Marshal of v; unstructured objects and lists go through MarshalContent.
func MarshalJSON(v any) ([]byte, error) {
	switch v := v.(type) {
	case *unstructured.Unstructured:
		return MarshalContent(v.Object)
	case *unstructured.UnstructuredList:
		items := make([]any, 0, len(v.Items))
		for _, it := range v.Items {
			items = append(items, it.Object)
		}
		list := make(map[string]any, len(v.Object)+1)
		for k, val := range v.Object {
			list[k] = val
		}
		list["items"] = items
		return MarshalContent(list)
	}
	return json.Marshal(v)
}

// UnmarshalContent decodes JSON into unstructured content in one pass, integers as int64
// as unstructured helpers expect; json.Unmarshal into an *unstructured.Unstructured parses
// the input three times. A body that is not a JSON object is an error.
func UnmarshalContent(data []byte) (map[string]any, error) {
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errNotObject
	}
	return m, nil
}

var errNotObject = errors.New("the JSON is not an object")

func appendContent(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendContent(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendContent(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return append(b, data...), nil
	}
}

// appendString quotes s as json.Marshal does; strings of plain printable ASCII, nearly all
// of them, are copied, the rest go through json.Marshal and its escaping (HTML characters,
// control characters, invalid UTF-8, U+2028 and U+2029).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			data, _ := json.Marshal(s) // a string always encodes
			return append(b, data...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
