package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkCreate compares one client's creates of a custom object with those of a ConfigMap
// of about the same size, through the HTTP handler into the embedded etcd: the in-process view
// of the apiserver suite's tests 4 and 5 (bench/internal/suite), for profiling with
// go test -run '^$' -bench Create -cpuprofile cpu.out ./apiserver/internal/server/.
func BenchmarkCreate(b *testing.B) {
	h := newHarness(b)
	ns := h.namespace()
	group := "bench-create.example.com"
	h.mustDo(http.StatusCreated, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", fmt.Sprintf(`{
 "apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"items.%[1]s"},
 "spec":{"group":"%[1]s","scope":"Namespaced","names":{"plural":"items","singular":"item","kind":"Item"},
  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","required":["note"],"properties":{"replicas":{"type":"integer","minimum":0},
     "mode":{"type":"string","enum":["fast","safe"],"default":"fast"},"note":{"type":"string"},"enabled":{"type":"boolean"}}},
    "status":{"type":"object","properties":{"observed":{"type":"integer"}}}}}}}]}}`, group), nil)
	note := strings.Repeat("x", 200)
	items := "/apis/" + group + "/v1/namespaces/" + ns + "/items"
	h.eventually("items to be served", func() bool {
		code, _ := h.do("GET", items, "", nil, nil)
		return code == http.StatusOK
	})
	for _, tc := range []struct {
		name, path, body string
	}{
		{"configmap", "/api/v1/namespaces/" + ns + "/configmaps",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","namespace":"` + ns + `"},"data":{"replicas":"1","enabled":"true","note":"` + note + `"}}`},
		{"custom", items,
			`{"apiVersion":"` + group + `/v1","kind":"Item","metadata":{"name":"%s","namespace":"` + ns + `"},"spec":{"replicas":1,"enabled":true,"note":"` + note + `"}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				resp, answer := h.send("POST", tc.path, fmt.Appendf(nil, tc.body, fmt.Sprintf("%s-%d", tc.name, i)), "Content-Type", "application/json")
				if resp.StatusCode != http.StatusCreated {
					b.Fatalf("create: %d %s", resp.StatusCode, answer)
				}
			}
		})
	}
}
