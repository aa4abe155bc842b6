package netsuite

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	mclient "minik8s.io/shared/client"
)

// TestMain lets the test binary be its own probe, as the bench binary is: Run re-executes
// os.Executable().
func TestMain(m *testing.M) {
	if IsProbe(os.Args) {
		os.Exit(ProbeMain(context.Background(), os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestRunSmall runs the suite at a tiny size on make up's cluster and checks that every
// target was measured from both vantage points and that the namespace is gone. It asserts no
// speed; the figures of a shared test machine mean nothing.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the cluster of make up, as root; skipped under -short")
	}
	var logs bytes.Buffer
	rep, err := Run(t.Context(), Config{Samples: 20, Warmup: 2, Transfers: 2, LargeBytes: 4 << 20}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("Run: %v (make up must be running; run with -short to skip)\nlogs:\n%s", err, logs.String())
	}
	for _, p := range append(rep.Latency, rep.Transfer...) {
		want := 20
		if p.PodIP.P50 > time.Second/10 { // a transfer, not a connection
			want = 2
		}
		if p.PodIP.N != p.ClusterIP.N || p.PodIP.N == 0 || p.PodIP.N > want {
			t.Errorf("%s: %d samples to the pod IP, %d through the ClusterIP", p.From, p.PodIP.N, p.ClusterIP.N)
		}
	}
	if len(rep.Latency) != 2 || len(rep.Transfer) != 2 || len(rep.DNS) != 3 {
		t.Errorf("report has %d latency, %d throughput, %d DNS rows; want 2, 2, 3", len(rep.Latency), len(rep.Transfer), len(rep.DNS))
	}
	for _, d := range rep.DNS {
		if d.Summary.N+d.Errors != 20 || d.Summary.N == 0 {
			t.Errorf("DNS %s at %s: %d answered, %d failed; want 20 queries", d.Query, d.Server, d.Summary.N, d.Errors)
		}
	}
	var out bytes.Buffer
	rep.Print(&out)
	for _, want := range []string{"| host ", "| client pod ", "ClusterIP " + rep.ClusterAddr, rep.OutsideName} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, out.String())
		}
	}

	ccfg, err := mclient.FromKubeconfig("")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := mclient.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = mclient.MustFor[*corev1.Namespace, *corev1.NamespaceList](cl).Get(t.Context(), "", rep.Namespace, metav1.GetOptions{})
	if !errors.Is(err, apierror.ErrNotFound) {
		t.Errorf("namespace %s after the run: %v, want NotFound", rep.Namespace, err)
	}
}
