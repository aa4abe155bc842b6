package ingress

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// loadCase reads testdata/<name>.yaml: Services and Ingresses, separated by ---.
func loadCase(t *testing.T, path string) ([]*networkingv1.Ingress, ServiceLookup) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ings []*networkingv1.Ingress
	svcs := map[string]*corev1.Service{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch head.Kind {
		case "":
		case "Service":
			var s corev1.Service
			if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			svcs[s.Namespace+"/"+s.Name] = &s
		case "Ingress":
			var ing networkingv1.Ingress
			if err := yaml.UnmarshalStrict([]byte(doc), &ing); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			ings = append(ings, &ing)
		default:
			t.Fatalf("%s: unexpected kind %q", path, head.Kind)
		}
	}
	return ings, func(ns, name string) *corev1.Service { return svcs[ns+"/"+name] }
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

// TestRenderGolden renders every testdata case and compares the configuration and the
// problems (the Warning events) with the golden files next to it. nginx_test.go runs the
// same golden configurations through the real nginx.
func TestRenderGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases in testdata (%v)", err)
	}
	for _, c := range cases {
		name := strings.TrimSuffix(filepath.Base(c), ".yaml")
		t.Run(name, func(t *testing.T) {
			ings, lookup := loadCase(t, c)
			cfg, problems := Resolve(ings, lookup)
			golden(t, filepath.Join("testdata", name+".conf"), Render(cfg))
			var ev bytes.Buffer
			for _, p := range problems {
				fmt.Fprintf(&ev, "%s Warning %s: %s\n", p.Ingress, p.Reason, p.Message)
			}
			golden(t, filepath.Join("testdata", name+".events"), ev.Bytes())

			// The order Ingresses arrive in does not matter.
			rev := make([]*networkingv1.Ingress, len(ings))
			for i, ing := range ings {
				rev[len(ings)-1-i] = ing
			}
			again, _ := Resolve(rev, lookup)
			if diff := cmp.Diff(string(Render(cfg)), string(Render(again))); diff != "" {
				t.Errorf("rendering depends on the order of the Ingresses (-first +reversed):\n%s", diff)
			}
		})
	}
}
