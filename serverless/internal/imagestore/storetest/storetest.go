package storetest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"minik8s.io/serverless/internal/imagestore"
)

// LabelTest marks every image the suite builds with the case's own value, so each case lists
// only its images and removes them when it ends.
const LabelTest = "minik8s.test/storetest"

// Repository starts the reference of every image the suite builds.
const Repository = "minik8s-test/storetest-"

// Env is one store under test.
type Env struct {
	Store imagestore.Store
	// Base is an image in Store to build on, whose default command runs until it is stopped.
	Base string
	// Use runs a container of the image ref until the test ends.
	Use func(t *testing.T, ref string)
}

// Factory returns an Env; it registers its own cleanup.
type Factory func(t *testing.T) Env

// Run runs the contract, each case on an Env of its own.
func Run(t *testing.T, newEnv Factory) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"BuildInspectList", testBuildInspectList},
		{"RebuildMovesTheTag", testRebuild},
		{"FailedBuildTagsNothing", testFailedBuild},
		{"RemoveTakesEveryTag", testRemove},
		{"RemoveRefusesAnImageInUse", testInUse},
		{"SaveAndLoadKeepTheImage", testSaveLoad},
		{"LoadRefusesWhatIsNoArchive", testLoadGarbage},
		{"NotFound", testNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newHarness(t, newEnv(t))) })
	}
}

type harness struct {
	t   *testing.T
	env Env
	s   imagestore.Store
	// run is this case's LabelTest value, part of its references too.
	run string
}

func newHarness(t *testing.T, env Env) *harness {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	h := &harness{t: t, env: env, s: env.Store, run: hex.EncodeToString(b)}
	t.Cleanup(h.removeAll)
	return h
}

// removeAll removes the case's images. It runs after Use's containers are gone: cleanups run
// last registered first.
func (h *harness) removeAll() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	imgs, err := h.s.List(ctx, h.labels())
	if err != nil {
		h.t.Errorf("cleanup: List: %v", err)
		return
	}
	for _, img := range imgs {
		if err := h.s.Remove(ctx, img.ID); err != nil && !errors.Is(err, imagestore.ErrNotFound) {
			h.t.Errorf("cleanup: Remove(%s): %v", img.ID, err)
		}
	}
}

func (h *harness) labels() map[string]string { return map[string]string{LabelTest: h.run} }

func (h *harness) ref(tag string) string { return Repository + h.run + ":" + tag }

// dockerfile builds on the base, copies greeting.txt and labels the image: the case's label,
// and a kind whose value has a space.
func (h *harness) dockerfile(steps ...string) string {
	lines := append([]string{"FROM " + h.env.Base}, steps...)
	lines = append(lines, fmt.Sprintf("LABEL %s=%s %s.kind=%s", LabelTest, strconv.Quote(h.run), LabelTest, strconv.Quote("a greeting")))
	return strings.Join(lines, "\n") + "\n"
}

// context is a build context: the Dockerfile and files, as a tar.
func (h *harness) context(dockerfile string, files map[string]string) []byte {
	h.t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := []string{"Dockerfile"}
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		data := files[n]
		if n == "Dockerfile" {
			data = dockerfile
		}
		hdr := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			h.t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		h.t.Fatal(err)
	}
	return buf.Bytes()
}

// build builds a greeting image tagged ref and returns its id and the lines of output.
func (h *harness) build(ref, greeting string) (string, []string) {
	h.t.Helper()
	var lines []string
	ctx := h.context(h.dockerfile("COPY greeting.txt /greeting.txt"), map[string]string{"greeting.txt": greeting})
	id, err := h.s.Build(h.t.Context(), bytes.NewReader(ctx), ref, func(l string) { lines = append(lines, l) })
	if err != nil {
		h.t.Fatalf("Build(%s): %v\n%s", ref, err, strings.Join(lines, "\n"))
	}
	if !strings.HasPrefix(id, "sha256:") {
		h.t.Fatalf("Build(%s) = id %q, want sha256:...", ref, id)
	}
	return id, lines
}

func (h *harness) inspect(ref string) imagestore.Image {
	h.t.Helper()
	img, err := h.s.Inspect(h.t.Context(), ref)
	if err != nil {
		h.t.Fatalf("Inspect(%s): %v", ref, err)
	}
	return img
}

func (h *harness) wantNotFound(ref string) {
	h.t.Helper()
	if img, err := h.s.Inspect(h.t.Context(), ref); !errors.Is(err, imagestore.ErrNotFound) {
		h.t.Errorf("Inspect(%s) = %+v, %v; want ErrNotFound", ref, img, err)
	}
}

// list returns the images carrying labels, sorted by id, tags sorted.
func (h *harness) list(labels map[string]string) []imagestore.Image {
	h.t.Helper()
	imgs, err := h.s.List(h.t.Context(), labels)
	if err != nil {
		h.t.Fatalf("List(%v): %v", labels, err)
	}
	for i := range imgs {
		slices.Sort(imgs[i].Tags)
	}
	slices.SortFunc(imgs, func(a, b imagestore.Image) int { return strings.Compare(a.ID, b.ID) })
	return imgs
}

// idsAndTags drops the labels, for comparing listings.
func idsAndTags(imgs []imagestore.Image) []imagestore.Image {
	out := make([]imagestore.Image, len(imgs))
	for i, img := range imgs {
		out[i] = imagestore.Image{ID: img.ID, Tags: img.Tags}
	}
	return out
}

var equateEmpty = cmpopts.EquateEmpty()

func testBuildInspectList(t *testing.T, h *harness) {
	ref := h.ref("v1")
	id, lines := h.build(ref, "hello")
	if len(lines) == 0 {
		t.Error("the build passed no line of output to progress")
	}
	img := h.inspect(ref)
	if img.ID != id || !slices.Contains(img.Tags, ref) {
		t.Errorf("Inspect(%s) = id %s tags %v; want %s tagged %s", ref, img.ID, img.Tags, id, ref)
	}
	// The Dockerfile's labels, and the base's kept.
	want := h.inspect(h.env.Base).Labels
	if want == nil {
		want = map[string]string{}
	}
	want[LabelTest], want[LabelTest+".kind"] = h.run, "a greeting"
	if d := cmp.Diff(want, img.Labels, equateEmpty); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	if byID := h.inspect(id); byID.ID != id {
		t.Errorf("Inspect by id %s = %s", id, byID.ID)
	}
	if d := cmp.Diff([]imagestore.Image{{ID: id, Tags: []string{ref}}}, idsAndTags(h.list(h.labels()))); d != "" {
		t.Errorf("List by the case's label (-want +got):\n%s", d)
	}
	both := map[string]string{LabelTest: h.run, LabelTest + ".kind": "a greeting"}
	if got := h.list(both); len(got) != 1 || got[0].ID != id {
		t.Errorf("List by both labels = %+v, want %s", got, id)
	}
	for _, labels := range []map[string]string{
		{LabelTest: h.run, LabelTest + ".kind": "another"},
		{LabelTest: "not-" + h.run},
	} {
		if got := h.list(labels); len(got) != 0 {
			t.Errorf("List(%v) = %+v, want nothing", labels, got)
		}
	}
}

func testRebuild(t *testing.T, h *harness) {
	ref := h.ref("v1")
	first, _ := h.build(ref, "hello")
	if again, _ := h.build(ref, "hello"); again != first {
		t.Errorf("the same context built again gave id %s, the first %s", again, first)
	}
	second, _ := h.build(ref, "hello again")
	if second == first {
		t.Fatalf("another file gave the same id %s", first)
	}
	if img := h.inspect(ref); img.ID != second {
		t.Errorf("%s names %s after the rebuild, want %s", ref, img.ID, second)
	}
	// The older image stays, untagged, still found by its labels.
	want := []imagestore.Image{{ID: first}, {ID: second, Tags: []string{ref}}}
	slices.SortFunc(want, func(a, b imagestore.Image) int { return strings.Compare(a.ID, b.ID) })
	if d := cmp.Diff(want, idsAndTags(h.list(h.labels())), equateEmpty); d != "" {
		t.Errorf("images after the rebuild (-want +got):\n%s", d)
	}
}

func testFailedBuild(t *testing.T, h *harness) {
	ref := h.ref("v1")
	var lines []string
	ctx := h.context(h.dockerfile("COPY missing.txt /missing.txt"), nil)
	id, err := h.s.Build(t.Context(), bytes.NewReader(ctx), ref, func(l string) { lines = append(lines, l) })
	var be *imagestore.BuildError
	if !errors.As(err, &be) || !strings.Contains(be.Message, "missing.txt") {
		t.Fatalf("Build copying a file the context lacks = %q, %v; want a BuildError naming missing.txt", id, err)
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Step 1/") {
		t.Errorf("output of the failed build: %q, want its steps", lines)
	}
	h.wantNotFound(ref)
}

func testRemove(t *testing.T, h *harness) {
	a, b := h.ref("a"), h.ref("b")
	id, _ := h.build(a, "hello")
	if idB, _ := h.build(b, "hello"); idB != id {
		t.Fatalf("one context under two tags gave two ids, %s and %s", id, idB)
	}
	tags := h.inspect(id).Tags
	slices.Sort(tags)
	if d := cmp.Diff([]string{a, b}, tags); d != "" {
		t.Errorf("tags of %s (-want +got):\n%s", id, d)
	}
	if err := h.s.Remove(t.Context(), id); err != nil {
		t.Fatalf("Remove(%s): %v", id, err)
	}
	h.wantNotFound(a)
	h.wantNotFound(b)
	h.wantNotFound(id)
	if got := h.list(h.labels()); len(got) != 0 {
		t.Errorf("List after Remove = %+v", got)
	}
	if err := h.s.Remove(t.Context(), id); !errors.Is(err, imagestore.ErrNotFound) {
		t.Errorf("Remove of a removed image = %v, want ErrNotFound", err)
	}
}

func testInUse(t *testing.T, h *harness) {
	ref := h.ref("v1")
	id, _ := h.build(ref, "hello")
	h.env.Use(t, ref)
	if err := h.s.Remove(t.Context(), id); !errors.Is(err, imagestore.ErrInUse) {
		t.Errorf("Remove of an image a container runs = %v, want ErrInUse", err)
	}
	if img := h.inspect(ref); img.ID != id {
		t.Errorf("%s names %s after the refused Remove, want %s", ref, img.ID, id)
	}
}

// manifestTags reads the tags an archive in docker save's format names.
func manifestTags(t *testing.T, archive []byte) []string {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("the archive has no manifest.json: %v", err)
		}
		if hdr.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			t.Fatalf("manifest.json: %v", err)
		}
		var tags []string
		for _, e := range m {
			tags = append(tags, e.RepoTags...)
		}
		return tags
	}
}

func (h *harness) save(ref string) []byte {
	h.t.Helper()
	rc, err := h.s.Save(h.t.Context(), ref)
	if err != nil {
		h.t.Fatalf("Save(%s): %v", ref, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		h.t.Fatalf("read the archive of %s: %v", ref, err)
	}
	return b
}

func testSaveLoad(t *testing.T, h *harness) {
	ref := h.ref("v1")
	id, _ := h.build(ref, "hello")
	before := h.inspect(ref)
	archive := h.save(ref)
	if d := cmp.Diff([]string{ref}, manifestTags(t, archive)); d != "" {
		t.Errorf("tags in the archive's manifest (-want +got):\n%s", d)
	}
	if err := h.s.Remove(t.Context(), id); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	h.wantNotFound(ref)
	loaded, err := h.s.Load(t.Context(), bytes.NewReader(archive))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if d := cmp.Diff([]string{ref}, loaded); d != "" {
		t.Errorf("Load's tags (-want +got):\n%s", d)
	}
	after := h.inspect(ref)
	if d := cmp.Diff(before, after, equateEmpty); d != "" {
		t.Errorf("the image loaded differs from the one saved (-saved +loaded):\n%s", d)
	}
	if _, err := h.s.Save(t.Context(), h.ref("never-built")); !errors.Is(err, imagestore.ErrNotFound) {
		t.Errorf("Save of an image never built = %v, want ErrNotFound", err)
	}
}

func testLoadGarbage(t *testing.T, h *harness) {
	if loaded, err := h.s.Load(t.Context(), strings.NewReader("this is not an image archive")); err == nil {
		t.Errorf("Load of garbage = %v, want an error", loaded)
	}
}

func testNotFound(t *testing.T, h *harness) {
	h.wantNotFound(h.ref("never-built"))
	missing := "sha256:" + strings.Repeat("0", 64)
	h.wantNotFound(missing)
	if err := h.s.Remove(t.Context(), missing); !errors.Is(err, imagestore.ErrNotFound) {
		t.Errorf("Remove(%s) = %v, want ErrNotFound", missing, err)
	}
	if got := h.list(h.labels()); len(got) != 0 {
		t.Errorf("List before any build = %+v", got)
	}
}
