package server

import (
	"strings"
	"testing"

	"minik8s.io/shared/scheme"
)

// FuzzWriteBodies sends arbitrary bodies to create, update and patch endpoints of every kind:
// bad input must be answered with a 4xx, never a 5xx or a crash.
func FuzzWriteBodies(f *testing.F) {
	seeds := []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
		`{"metadata":{"name":"x","labels":{"a":"b"}},"spec":{"replicas":-1,"selector":{"matchLabels":{}}}}`,
		`{"metadata":{"name":"s"},"spec":{"type":"NodePort","ports":[{"port":0,"nodePort":99999}],"clusterIP":"10.96.0.1"}}`,
		`{"metadata":{"name":"f"},"spec":{"handler":"main","source":{}}}`,
		`{"metadata":{"name":"w"},"spec":{"startAt":"a","states":{"a":{"type":"Choice","choices":[{"variable":"$.x"}]}}}}`,
		`[{"op":"remove","path":"/spec"}]`,
		`{"spec":null,"metadata":null}`,
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {\"\": x}\n",
		`{"metadata":{"name":"n","namespace":"other"}}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), uint8(i%4), []byte(s))
	}
	shared := newHarness(f)
	ns := shared.namespace()
	f.Fuzz(func(t *testing.T, kind, verb uint8, body []byte) {
		h := *shared
		h.t = t
		r := scheme.Resources[int(kind)%len(scheme.Resources)]
		base := "/api/v1"
		if r.GVK.Group != "" {
			base = "/apis/" + r.GVK.Group + "/" + r.GVK.Version
		}
		if r.Namespaced {
			base += "/namespaces/" + ns
		}
		base += "/" + r.Plural
		var method, path, ctype string
		switch verb % 5 {
		case 0:
			method, path = "POST", base+"?fieldValidation=Strict"
		case 1:
			method, path, ctype = "POST", base, "application/yaml"
		case 2:
			method, path = "PUT", base+"/p"
		case 3:
			method, path, ctype = "PATCH", base+"/p", "application/merge-patch+json"
		case 4:
			method, path, ctype = "PATCH", base+"/p", "application/json-patch+json"
		}
		code, _ := h.do(method, path, ctype, body, nil)
		if code >= 500 {
			t.Fatalf("%s %s with %q: %d", method, path, truncate(string(body)), code)
		}
	})
}

func truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
