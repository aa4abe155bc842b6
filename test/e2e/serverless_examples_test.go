package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/client"
)

// TestServerlessExamples applies configs/serverless's thumbnailer and text pipeline as the
// README does and checks that they do their work: a picture comes back as a thumbnail that
// fits the asked box with its aspect ratio, a long text is summarized and a short one passes
// through the pipeline's Choice unchanged.
func TestServerlessExamples(t *testing.T) {
	c := requireMakeUp(t)
	ns := fmt.Sprintf("e2e-examples-%d", time.Now().UnixNano()%1_000_000)
	kc := []string{"--kubeconfig", c.kubeconfig}
	ours := func(args ...string) string {
		return execOK(t, append([]string{bins.kubectl}, append(kc, args...)...)...)
	}
	execOK(t, realKubectl, "--kubeconfig", c.kubeconfig, "create", "namespace", ns)
	t.Cleanup(func() {
		_, _ = execErr(context.Background(), realKubectl, "--kubeconfig", c.kubeconfig, "delete", "namespace", ns, "--wait=false")
	})
	configs := filepath.Join("..", "..", "configs", "serverless")
	ours("-n", ns, "apply", "-f", filepath.Join(configs, "thumbnail.yaml"), "-f", filepath.Join(configs, "text-pipeline.yaml"))

	functions := client.MustFor[*serverlessv1.Function, *serverlessv1.FunctionList](c.cl)
	for _, name := range []string{"thumbnail", "text-clean", "text-count", "text-summarize"} {
		var last *serverlessv1.Function
		eventually(t, 5*time.Minute, "function "+name+" built", func() bool {
			fn, err := functions.Get(t.Context(), ns, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			last = fn
			if fn.Status.Phase == "Failed" {
				t.Fatalf("function %s failed to build: %+v", name, fn.Status.Build)
			}
			return fn.Status.Phase == "Ready" && fn.Status.Image != ""
		})
		if src := last.Spec.Source["main.py"]; name == "thumbnail" && !strings.Contains(src, "from PIL import") {
			t.Fatalf("thumbnail's sourcePath was not packed into spec.source: %v", last.Spec.Source)
		}
	}

	t.Run("thumbnail", func(t *testing.T) {
		// A 320x200 picture with a diagonal, so the encoder cannot flatten it to nothing.
		img := image.NewRGBA(image.Rect(0, 0, 320, 200))
		for x := 0; x < 320; x++ {
			for y := 0; y < 200; y++ {
				img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8((x + y) / 2), 255})
			}
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(map[string]any{"image": base64.StdEncoding.EncodeToString(buf.Bytes()), "width": 64, "height": 64})
		r, err := c.invoke(t.Context(), ns, "thumbnail", string(body))
		if err != nil || r.code != http.StatusOK {
			t.Fatalf("thumbnail: %v %d %s", err, r.code, r.raw)
		}
		var out struct {
			Thumbnail                     string
			Width, Height                 int
			OriginalWidth, OriginalHeight int
		}
		if err := json.Unmarshal([]byte(r.raw), &out); err != nil {
			t.Fatalf("thumbnail answer %s: %v", r.raw, err)
		}
		data, err := base64.StdEncoding.DecodeString(out.Thumbnail)
		if err != nil {
			t.Fatalf("thumbnail is not base64: %v", err)
		}
		thumb, format, err := image.Decode(bytes.NewReader(data))
		if err != nil || format != "png" {
			t.Fatalf("thumbnail is not a PNG (%q): %v", format, err)
		}
		// 320x200 into 64x64 keeps the ratio: 64x40.
		if b := thumb.Bounds(); b.Dx() != 64 || b.Dy() != 40 || out.Width != 64 || out.Height != 40 ||
			out.OriginalWidth != 320 || out.OriginalHeight != 200 {
			t.Errorf("thumbnail %dx%d (says %dx%d of %dx%d), want 64x40 of 320x200", b.Dx(), b.Dy(), out.Width, out.Height, out.OriginalWidth, out.OriginalHeight)
		}
		// Not a picture: the handler's ValueError comes back as a 502 with its message.
		r, err = c.invoke(t.Context(), ns, "thumbnail", `{"image": "bm90IGEgcGljdHVyZQ=="}`)
		if err != nil || r.code != http.StatusBadGateway || !strings.Contains(r.raw, "ValueError: image is not a picture") {
			t.Errorf("thumbnail of text: %v %d %s", err, r.code, r.raw)
		}
	})

	t.Run("text pipeline", func(t *testing.T) {
		// A short text takes the Choice's default: the Pass state's verdict.
		if out := ours("-n", ns, "execute", "workflow", "text-pipeline", `{"text": "Short  and\tsweet."}`); !sameJSON(out, `"short enough to read whole"`) {
			t.Errorf("short text through the pipeline = %s", out)
		}
		// A long one is cleaned (runs of blanks become one space), counted and summarized: two
		// of its sentences, as they were, in their order.
		sentences := []string{"Kubernetes schedules containers onto nodes.", "The weather was mild and the lunch had soup.",
			"Kubernetes restarts containers on nodes that fail.", "Nobody asked about the bread or the coffee.",
			"Pods of containers share their nodes with other pods.", "A short walk after lunch helps everyone think."}
		body, _ := json.Marshal(map[string]string{"text": strings.Join(sentences, "   ")})
		var summary string
		if err := json.Unmarshal([]byte(ours("-n", ns, "execute", "workflow", "text-pipeline", string(body))), &summary); err != nil {
			t.Fatalf("the summary is not a JSON string: %v", err)
		}
		kept, at := 0, 0
		for _, s := range sentences {
			if i := strings.Index(summary, s); i >= 0 {
				if i < at {
					t.Errorf("summary %q changed the sentences' order", summary)
				}
				kept, at = kept+1, i
			}
		}
		if kept != 2 || len(summary) >= len(strings.Join(sentences, " ")) {
			t.Errorf("summary %q: want two of the text's sentences", summary)
		}
	})
}
