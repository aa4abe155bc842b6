package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubelet/internal/runtime/runtimetest"
)

func post(t *testing.T, url, token string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestImagePresent(t *testing.T) {
	hs, rt, _, _ := setup(t)
	rt.AddImage("minik8s-fn/default.add:v1")
	for _, tc := range []struct {
		ref, token string
		code       int
		present    bool
	}{
		{"minik8s-fn/default.add:v1", "good", 200, true},
		{"minik8s-fn/default.add:v2", "good", 404, false},
		{"img", "good", 200, true},
		{"minik8s-fn/default.add:v1", "", 401, false},
		{"minik8s-fn/default.add:v1", "bad", 401, false},
	} {
		code, body := get(t, hs.URL+"/images/"+tc.ref, tc.token)
		if code != tc.code {
			t.Errorf("GET /images/%s with %q: %d %s, want %d", tc.ref, tc.token, code, body, tc.code)
			continue
		}
		if code == 401 {
			continue
		}
		var got ImagePresence
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		want := ImagePresence{Image: tc.ref, Present: tc.present}
		if tc.present {
			if want.ID, _ = rt.ImageID(t.Context(), tc.ref); !strings.HasPrefix(want.ID, "sha256:") {
				t.Fatalf("the fake's id of %s: %q", tc.ref, want.ID)
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("GET /images/%s (-want +got):\n%s", tc.ref, d)
		}
	}
}

func TestLoadImage(t *testing.T) {
	hs, rt, _, _ := setup(t)
	const ref = "minik8s-fn/default.add:v3"
	archive := runtimetest.ImageArchive(ref)
	// Only the serverless component and admins may load images.
	for _, token := range []string{"", "bad", "good"} {
		code, body := post(t, hs.URL+"/images", token, archive)
		want := http.StatusForbidden
		if token != "good" {
			want = http.StatusUnauthorized
		}
		if code != want {
			t.Errorf("POST /images with %q: %d %s, want %d", token, code, body, want)
		}
	}
	if code, body := get(t, hs.URL+"/images/"+ref, "good"); code != 404 {
		t.Fatalf("a refused load left the image: %d %s", code, body)
	}
	if code, body := post(t, hs.URL+"/images", "good", archive); !strings.Contains(body, `user "alice" may not load images into node n1`) {
		t.Errorf("403 body: %d %s", code, body)
	}
	for _, token := range []string{"serverless", "admin"} {
		code, body := post(t, hs.URL+"/images", token, archive)
		if code != 200 {
			t.Fatalf("POST /images as %s: %d %s", token, code, body)
		}
		var got ImagesLoaded
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if d := cmp.Diff(ImagesLoaded{Loaded: []string{ref}}, got); d != "" {
			t.Errorf("loaded (-want +got):\n%s", d)
		}
	}
	if ok, _ := rt.ImagePresent(t.Context(), ref); !ok {
		t.Error("the runtime does not have the loaded image")
	}
	if code, _ := get(t, hs.URL+"/images/"+ref, "good"); code != 200 {
		t.Errorf("GET after the load: %d", code)
	}
	if code, body := post(t, hs.URL+"/images", "serverless", []byte("not a tar")); code != 400 || !strings.Contains(body, "invalid image archive") {
		t.Errorf("garbage: %d %s, want 400", code, body)
	}
}
