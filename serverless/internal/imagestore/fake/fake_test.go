package fake_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/serverless/internal/imagestore"
	"minik8s.io/serverless/internal/imagestore/fake"
	"minik8s.io/serverless/internal/imagestore/storetest"
)

const base = "minik8s-test/base:1"

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Env {
		s := fake.New()
		s.Add(base, map[string]string{"org.opencontainers.image.title": "base"})
		return storetest.Env{Store: s, Base: base, Use: func(t *testing.T, ref string) {
			release, err := s.Use(ref)
			if err != nil {
				t.Fatalf("Use(%s): %v", ref, err)
			}
			t.Cleanup(release)
		}}
	})
}

// dockerfileOnly is a build context of a Dockerfile alone.
func dockerfileOnly(t *testing.T, dockerfile string) *bytes.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(dockerfile)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(buf.Bytes())
}

// TestRun: RUN steps do what the test says, their output among the build's lines, and a
// non-zero exit fails the build with the classic builder's message.
func TestRun(t *testing.T) {
	s := fake.New()
	var ran []string
	s.Run = func(_ context.Context, cmd string) ([]string, int) {
		ran = append(ran, cmd)
		if strings.HasPrefix(cmd, "pip") {
			return []string{"ERROR: No matching distribution found for nope"}, 1
		}
		return nil, 0
	}
	var lines []string
	_, err := s.Build(t.Context(), dockerfileOnly(t, "FROM scratch\nRUN true\nRUN pip install nope\nLABEL a=b\n"), "x:1",
		func(l string) { lines = append(lines, l) })
	var be *imagestore.BuildError
	if !errors.As(err, &be) || be.Message != "The command '/bin/sh -c pip install nope' returned a non-zero code: 1" {
		t.Fatalf("Build = %v, want pip's failure", err)
	}
	if d := cmp.Diff([]string{"true", "pip install nope"}, ran); d != "" {
		t.Errorf("commands run (-want +got):\n%s", d)
	}
	want := []string{"Step 1/4 : FROM scratch", "Step 2/4 : RUN true", "Step 3/4 : RUN pip install nope", "ERROR: No matching distribution found for nope"}
	var got []string
	for _, l := range lines {
		if !strings.HasPrefix(l, " ---> ") {
			got = append(got, l)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("output (-want +got):\n%s", d)
	}
	if _, err := s.Inspect(t.Context(), "x:1"); !errors.Is(err, imagestore.ErrNotFound) {
		t.Errorf("a failed build tagged x:1 (%v)", err)
	}
}

func TestBuildFailures(t *testing.T) {
	for _, tc := range []struct{ dockerfile, want string }{
		{"FROM minik8s/python-runtime:latest\n", "pull access denied for minik8s/python-runtime"},
		{"LABEL a=b\n", "no build stage"},
		{"FROM scratch\nFETCH x\n", "unknown instruction: FETCH"},
		{"FROM scratch\nLABEL lonely\n", `LABEL names "lonely" without a value`},
	} {
		_, err := fake.New().Build(t.Context(), dockerfileOnly(t, tc.dockerfile), "x:1", nil)
		var be *imagestore.BuildError
		if !errors.As(err, &be) || !strings.Contains(be.Message, tc.want) {
			t.Errorf("Build of %q = %v, want a BuildError with %q", tc.dockerfile, err, tc.want)
		}
	}
}

// TestIDsAcrossStores: what distribute relies on: an image keeps its id when sent to another
// store, and the same content has the same id anywhere.
func TestIDsAcrossStores(t *testing.T) {
	a, b := fake.New(), fake.New()
	labels := map[string]string{"v": "1"}
	if a.Add("fn:v1", labels) != b.Add("fn:v1", labels) {
		t.Error("one ref and labels gave two ids")
	}
	if a.Add("fn:v1", labels) == b.Add("fn:v1", map[string]string{"v": "2"}) {
		t.Error("other labels gave the same id")
	}
	// A reference without a tag means :latest, as in Docker.
	id := a.Add("fn", nil)
	rc, err := a.Save(t.Context(), "fn")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := b.Load(t.Context(), rc)
	if err != nil || len(loaded) != 1 || loaded[0] != "fn:latest" {
		t.Fatalf("Load = %v, %v; want fn:latest", loaded, err)
	}
	if img, err := b.Inspect(t.Context(), "fn:latest"); err != nil || img.ID != id {
		t.Errorf("loaded image %+v (%v), want id %s", img, err, id)
	}
	if d := cmp.Diff([]string{"save fn"}, a.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}
