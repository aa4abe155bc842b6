package build

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/serverless/internal/imagestore/fake"
	sv1 "minik8s.io/shared/apis/serverless/v1"
)

// Builds and removals on the fake image store; docker_test.go does the same on Docker.

// fakeStore is an engine holding the runtime base, whose RUN steps do what run says.
func fakeStore(run func(ctx context.Context, cmd string) ([]string, int)) *fake.Store {
	s := fake.New()
	s.Add(DefaultBase, map[string]string{"org.opencontainers.image.title": "minik8s/python-runtime"})
	s.Run = run
	return s
}

func source(name string, version int64, main string) Source {
	return Source{Namespace: "default", Name: name, Version: version, Handler: "main.handler",
		Files: map[string]string{"main.py": main}}
}

func TestBuildOnFake(t *testing.T) {
	var ran []string
	s := fakeStore(func(_ context.Context, cmd string) ([]string, int) {
		ran = append(ran, cmd)
		return []string{"ran " + strings.Fields(cmd)[0]}, 0
	})
	b := New(Config{Images: s, Cluster: "minik8s-a", PipArgs: []string{"--index-url", "http://mirror/simple"}})
	src := source("add", 3, "def handler(e):\n    return e\n")
	src.Requirements = "six\n"
	var progress []string
	res, err := b.Build(t.Context(), src, func(l string) { progress = append(progress, l) })
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, res.Log)
	}
	img, err := s.Inspect(t.Context(), "minik8s-fn/default.add:v3")
	if err != nil || res.Image != "minik8s-fn/default.add:v3" || res.ID != img.ID {
		t.Fatalf("result %+v, image %+v (%v)", res, img, err)
	}
	for k, v := range Labels("minik8s-a", "default", "add", 3) {
		if img.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, img.Labels[k], v)
		}
	}
	if len(ran) != 2 || !strings.HasPrefix(ran[0], "pip install") || !strings.Contains(ran[0], "--index-url http://mirror/simple") ||
		!strings.HasPrefix(ran[1], "python3 -m compileall") {
		t.Errorf("RUN steps %q, want pip with the mirror, then compileall", ran)
	}
	if !slices.Contains(progress, "ran pip") || res.Log != strings.Join(progress, "\n") {
		t.Errorf("progress %q and log %q: want every line in both", progress, res.Log)
	}
}

func TestBuildExplainsFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		noBase bool
		output []string
		want   string
	}{
		{"pip without an index", false, []string{
			"WARNING: Retrying (...) after connection broken by 'NewConnectionError('<...>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/six/",
			"ERROR: No matching distribution found for six"},
			"installing requirements with pip failed: no package index answered (Temporary failure in name resolution): ERROR: No matching distribution found for six"},
		{"no runtime base", true, nil, "the runtime base image is missing (make images builds minik8s/python-runtime): pull access denied for minik8s/python-runtime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeStore(func(_ context.Context, cmd string) ([]string, int) { return tc.output, 1 })
			if tc.noBase {
				s = fake.New()
			}
			src := source("add", 1, "")
			src.Requirements = "six\n"
			res, err := New(Config{Images: s}).Build(t.Context(), src, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build = %v, want %q", err, tc.want)
			}
			if res.ID != "" || res.Log == "" {
				t.Errorf("result of a failed build: %+v, want no id and the log", res)
			}
			if imgs, _ := s.List(t.Context(), map[string]string{sv1.LabelFunction: "add"}); len(imgs) != 0 {
				t.Errorf("a failed build left %+v", imgs)
			}
		})
	}
}

func TestBuildTimeoutOnFake(t *testing.T) {
	s := fakeStore(func(ctx context.Context, _ string) ([]string, int) {
		<-ctx.Done()
		return nil, 137
	})
	_, err := New(Config{Images: s, Timeout: 50 * time.Millisecond}).Build(t.Context(), source("add", 1, ""), nil)
	if err == nil || !strings.Contains(err.Error(), "timed out after 50ms") {
		t.Fatalf("Build = %v, want a timeout", err)
	}
}

// TestRemoveOnFake: Remove takes this cluster's images of the function (and those with no
// cluster, and older builds whose tag moved) except the version kept, leaves another
// cluster's, and reports one a container runs.
func TestRemoveOnFake(t *testing.T) {
	s := fakeStore(nil)
	a, other, none := New(Config{Images: s, Cluster: "minik8s-a"}), New(Config{Images: s, Cluster: "minik8s-b"}), New(Config{Images: s})
	build := func(b *Builder, version int64, main string) Result {
		t.Helper()
		res, err := b.Build(t.Context(), source("add", version, main), nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	v1 := build(a, 1, "")
	v2 := build(other, 2, "")
	older := build(none, 3, "# first\n")
	v3 := build(none, 3, "# second\n")
	v4 := build(a, 4, "")
	if again := build(a, 1, ""); again.ID != v1.ID {
		t.Errorf("the same source built again gave %s, first %s", again.ID, v1.ID)
	}
	release, err := s.Use(v1.Image)
	if err != nil {
		t.Fatal(err)
	}
	removed, inUse, err := a.Remove(t.Context(), "default", "add", 4)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sorted([]string{v3.Image, older.ID}), sorted(removed)); d != "" {
		t.Errorf("removed (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{v1.Image}, inUse); d != "" {
		t.Errorf("in use (-want +got):\n%s", d)
	}
	for _, ref := range []string{v1.Image, v2.Image, v4.Image} {
		if _, err := s.Inspect(t.Context(), ref); err != nil {
			t.Errorf("%s is gone: %v", ref, err)
		}
	}
	release()
	removed, inUse, err = a.Remove(t.Context(), "default", "add", 0)
	if err != nil || len(inUse) != 0 || !cmp.Equal([]string{v1.Image, v4.Image}, sorted(removed)) {
		t.Errorf("Remove of all = %v, %v, %v; want %s and %s", removed, inUse, err, v1.Image, v4.Image)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
