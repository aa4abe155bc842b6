package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"minik8s.io/shared/bus/amqpbus/amqptest"
)

// bins holds the binaries TestMain builds once for the whole package.
var bins struct {
	dir       string
	apiserver string
	kubectl   string // ours
	kubelet   string // the node agent
	err       error  // why the build failed; tests report it
}

// shared is the apiserver most tests use; TestMain stops it. Tests that restart a server
// start their own, so a restart never disturbs another test.
var shared struct {
	once  sync.Once
	srv   *apiserver
	vhost string // the shared server's RabbitMQ vhost, deleted after the last test
	err   error
}

// realKubectl is the upstream kubectl the tests compare against.
const realKubectl = "/usr/bin/kubectl"

func TestMain(m *testing.M) {
	flag.Parse()
	code := run(m)
	os.Exit(code)
}

func run(m *testing.M) int {
	// Under -short every test here skips (they all need RabbitMQ and a real apiserver), so
	// building would only cost time.
	// A child process of a test (clientgo_test.go) uses its parent's servers and binaries.
	if !testing.Short() && os.Getenv(clientGoChildEnv) == "" {
		dir, err := os.MkdirTemp("", "minik8s-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		bins.dir = dir
		bins.err = build(dir)
	}
	code := m.Run()
	if shared.srv != nil {
		if err := shared.srv.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stop shared apiserver:", err)
			code = 1
		}
		_ = os.RemoveAll(shared.srv.home)
	}
	if shared.vhost != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := amqptest.DeleteVHost(ctx, shared.vhost); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			code = 1
		}
	}
	return code
}

// build compiles the apiserver and our kubectl into dir; the workspace (go.work) resolves
// their modules, so it runs from this package's directory.
func build(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, b := range []struct{ out, pkg string }{
		{"apiserver", "minik8s.io/apiserver/cmd/apiserver"},
		{"kubectl", "minik8s.io/kubectl/cmd/kubectl"},
		{"kubelet", "minik8s.io/kubelet/cmd/kubelet"},
	} {
		out := filepath.Join(dir, b.out)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, b.pkg)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", b.pkg, err, msg)
		}
	}
	bins.apiserver = filepath.Join(dir, "apiserver")
	bins.kubectl = filepath.Join(dir, "kubectl")
	bins.kubelet = filepath.Join(dir, "kubelet")
	return nil
}

// requireBinaries fails the test when TestMain could not build the binaries.
func requireBinaries(t *testing.T) {
	t.Helper()
	if bins.err != nil {
		t.Fatalf("building the binaries failed: %v", bins.err)
	}
	if bins.apiserver == "" {
		t.Fatal("binaries were not built (TestMain skipped the build)")
	}
}

// sharedServer returns the package's apiserver, starting it on first use.
func sharedServer(t *testing.T) *apiserver {
	t.Helper()
	requireIntegration(t)
	shared.once.Do(func() {
		home, err := os.MkdirTemp("", "minik8s-e2e-home-")
		if err != nil {
			shared.err = err
			return
		}
		srv, err := newAPIServer(home)
		if err != nil {
			shared.err = err
			return
		}
		// A vhost of its own, so no other cluster on the broker sees this one's changes.
		if srv.amqpURL, shared.vhost, err = amqptest.NewVHost(context.Background(), "minik8s-e2e-shared"); err != nil {
			shared.err = err
			return
		}
		if err := srv.start(context.Background()); err != nil {
			shared.err = err
			return
		}
		shared.srv = srv
	})
	if shared.err != nil {
		t.Fatalf("shared apiserver: %v", shared.err)
	}
	return shared.srv
}
