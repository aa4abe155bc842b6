package build

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"minik8s.io/serverless/internal/imagestore/dockerstore"
	sv1 "minik8s.io/shared/apis/serverless/v1"
)

// Builds with the real Docker engine on the real runtime base (make images builds it).

// docker returns the client (to run containers) and the store over it (to build in).
func docker(t *testing.T) (*client.Client, *dockerstore.Store) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds images with Docker (-short)")
	}
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Ping(ctx); err != nil {
		t.Fatalf("docker does not answer (make up starts it): %v", err)
	}
	if _, _, err := c.ImageInspectWithRaw(ctx, DefaultBase); err != nil {
		t.Fatalf("no runtime base %s (scripts/images.sh python-runtime builds it): %v", DefaultBase, err)
	}
	return c, dockerstore.New(c)
}

// testName is a function name no other test or run uses at the same time.
func testName(t *testing.T) string {
	n := strings.ToLower(strings.NewReplacer("/", "", "_", "").Replace(strings.TrimPrefix(t.Name(), "Test")))
	return "t" + n + "-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
}

// run starts the image and returns the runtime's address (the container's bridge IP).
func run(t *testing.T, c *client.Client, image string) string {
	t.Helper()
	ctx := t.Context()
	created, err := c.ContainerCreate(ctx, &container.Config{Image: image, Hostname: "fn-pod-1"}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	})
	if err := c.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	info, err := c.ContainerInspect(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	ip := info.NetworkSettings.IPAddress
	if ip == "" {
		for _, n := range info.NetworkSettings.Networks {
			ip = n.IPAddress
		}
	}
	if ip == "" {
		t.Fatal("the container has no address")
	}
	return "http://" + ip + ":8080"
}

func post(t *testing.T, url, body string) (int, string, string) {
	t.Helper()
	resp, err := http.Post(url+sv1.RuntimeInvokePath, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get(sv1.HeaderServedBy)
}

func TestBuildAndCall(t *testing.T) {
	c, store := docker(t)
	b := New(Config{Images: store})
	name := testName(t)
	t.Cleanup(func() { _, _, _ = b.Remove(context.Background(), "default", name, 0) })
	src := Source{Namespace: "default", Name: name, Version: 1, Handler: "main.handler", Files: map[string]string{
		"main.py":         "from lib.words import count\n\ndef handler(event):\n    return {'words': count(event['text'])}\n",
		"lib/__init__.py": "",
		"lib/words.py":    "import yaml\n\ndef count(s):\n    return len(s.split())\n",
	}}
	var lines []string
	start := time.Now()
	res, err := b.Build(t.Context(), src, func(l string) { lines = append(lines, l) })
	if err != nil {
		t.Fatalf("build: %v\n%s", err, res.Log)
	}
	t.Logf("built %s in %v", res.Image, time.Since(start).Round(time.Millisecond))
	if res.Image != "minik8s-fn/default."+name+":v1" || !strings.HasPrefix(res.ID, "sha256:") {
		t.Fatalf("result %+v", res)
	}
	if len(lines) == 0 || !strings.Contains(strings.Join(lines, "\n"), "Step 1/") {
		t.Errorf("progress lines: %q", lines)
	}
	img, err := store.Inspect(t.Context(), res.Image)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range Labels("", "default", name, 1) {
		if img.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, img.Labels[k], v)
		}
	}
	start = time.Now()
	url := run(t, c, res.Image)
	waitFor(t, "the function's runtime to be ready", func() bool {
		resp, err := http.Get(url + sv1.RuntimeReadyPath)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	t.Logf("container started and ready in %v", time.Since(start).Round(time.Millisecond))
	for _, tc := range []struct{ in, want string }{
		{`{"text": "one two three"}`, `{"words": 3}`},
		{`{"text": "serverless"}`, `{"words": 1}`},
	} {
		code, body, by := post(t, url, tc.in)
		if code != 200 || body != tc.want || by != "fn-pod-1" {
			t.Errorf("call %s: %d %s (served by %q), want 200 %s from fn-pod-1", tc.in, code, body, by, tc.want)
		}
	}
	code, body, _ := post(t, url, `{}`)
	var re sv1.RuntimeError
	if code != 500 || json.Unmarshal([]byte(body), &re) != nil || re.Error != "KeyError: 'text'" ||
		!strings.Contains(re.Traceback, `/function/main.py", line 4`) {
		t.Errorf("failing call: %d %s", code, body)
	}

	// A second version; Remove keeping it takes the first away.
	src.Version = 2
	src.Files["main.py"] = "def handler(event):\n    return 'v2'\n"
	if res, err := b.Build(t.Context(), src, nil); err != nil {
		t.Fatalf("build v2: %v\n%s", err, res.Log)
	}
	removed, inUse, err := b.Remove(t.Context(), "default", name, 2)
	if err != nil {
		t.Fatal(err)
	}
	// v1 still runs in the container above.
	if len(removed) != 0 || len(inUse) != 1 || inUse[0] != Image("default", name, 1) {
		t.Errorf("Remove while v1 runs: removed %v, in use %v", removed, inUse)
	}
	if _, err := store.Inspect(t.Context(), Image("default", name, 2)); err != nil {
		t.Errorf("v2 is gone: %v", err)
	}
}

func TestBuildFailures(t *testing.T) {
	_, store := docker(t)
	b := New(Config{Images: store})
	name := testName(t)
	t.Cleanup(func() { _, _, _ = b.Remove(context.Background(), "default", name, 0) })
	for _, tc := range []struct {
		name string
		src  Source
		want string
	}{
		{"syntax error", Source{Files: map[string]string{"main.py": "def handler(event):\n    return (\n"}},
			"the source does not compile: main.py line 2: SyntaxError: '(' was never closed"},
		{"requirements without an index", Source{Files: map[string]string{"main.py": "def handler(e):\n    return e\n"},
			Requirements: "minik8s-no-such-package==1.0\n"},
			"installing requirements with pip failed: no package index answered (Name or service not known): ERROR: No matching distribution found for minik8s-no-such-package==1.0"},
		{"bad handler", Source{Handler: "main.handler.x", Files: map[string]string{"main.py": ""}},
			"the source has no main/handler.py"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			src.Namespace, src.Name, src.Version = "default", name, 7
			if src.Handler == "" {
				src.Handler = "main.handler"
			}
			res, err := b.Build(t.Context(), src, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build = %v, want an error with %q; log:\n%s", err, tc.want, res.Log)
			}
			t.Logf("%v", err)
			if _, err := store.Inspect(t.Context(), Image("default", name, 7)); err == nil {
				t.Errorf("a failed build left the image %s", Image("default", name, 7))
			}
		})
	}
}

func TestBuildTimeout(t *testing.T) {
	_, store := docker(t)
	b := New(Config{Images: store, Timeout: 2 * time.Second, PipArgs: []string{"--index-url", "http://10.255.255.1/simple"}})
	name := testName(t)
	t.Cleanup(func() { _, _, _ = b.Remove(context.Background(), "default", name, 0) })
	res, err := b.Build(t.Context(), Source{Namespace: "default", Name: name, Version: 1, Handler: "main.handler",
		Files: map[string]string{"main.py": ""}, Requirements: "six\n"}, nil)
	if err == nil || !strings.Contains(err.Error(), "timed out after 2s") {
		t.Fatalf("Build = %v, want a timeout; log:\n%s", err, res.Log)
	}
}

// TestRemoveOnlyOwnCluster: two clusters on one engine build versions of a function of the
// same namespace and name; each one's Remove takes its own images (and those with no cluster,
// built before images had one) and leaves the other's.
func TestRemoveOnlyOwnCluster(t *testing.T) {
	_, store := docker(t)
	name := testName(t)
	a := New(Config{Images: store, Cluster: "minik8s-a"})
	b := New(Config{Images: store, Cluster: "minik8s-b"})
	t.Cleanup(func() {
		_, _, _ = New(Config{Images: store}).Remove(context.Background(), "default", name, 0)
	})
	src := Source{Namespace: "default", Name: name, Handler: "main.handle",
		Files: map[string]string{"main.py": "def handle(event):\n    return event\n"}}
	src.Version = 1
	resA, err := a.Build(t.Context(), src, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	src.Version = 2
	resB, err := b.Build(t.Context(), src, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	src.Version = 3
	resNone, err := New(Config{Images: store}).Build(t.Context(), src, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	img, err := store.Inspect(t.Context(), resA.Image)
	if err != nil || img.Labels[LabelCluster] != "minik8s-a" {
		t.Fatalf("%s: labels %v (%v), want %s=minik8s-a", resA.Image, img.Labels, err, LabelCluster)
	}
	removed, _, err := a.Remove(t.Context(), "default", name, 0)
	slices.Sort(removed)
	if err != nil || !slices.Equal(removed, []string{resA.Image, resNone.Image}) {
		t.Errorf("cluster a's Remove: removed %v (%v), want %s and %s", removed, err, resA.Image, resNone.Image)
	}
	if _, err := store.Inspect(t.Context(), resB.Image); err != nil {
		t.Errorf("cluster b's %s is gone after cluster a's Remove: %v", resB.Image, err)
	}
	if removed, _, err := b.Remove(t.Context(), "default", name, 0); err != nil || len(removed) != 1 || removed[0] != resB.Image {
		t.Errorf("cluster b's Remove: removed %v (%v), want %s", removed, err, resB.Image)
	}
}
