package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Package is the import path of the apiserver command.
const Package = "minik8s.io/apiserver/cmd/apiserver"

// KubeletPackage is the import path of the kubelet command.
const KubeletPackage = "minik8s.io/kubelet/cmd/kubelet"

// PprofEnv names the variable that makes a binary built with pprof serve
// net/http/pprof on the address it holds.
const PprofEnv = "MINIK8S_BENCH_PPROF"

// pprofSource is added to the apiserver's main package through a build
// overlay: profiling needs a listener the apiserver does not have, and the
// overlay keeps the source tree untouched. The handlers live on
// http.DefaultServeMux, which the apiserver never serves, so only this
// listener exposes them.
const pprofSource = `package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("` + PprofEnv + `"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
`

// Build compiles the apiserver into dir and returns the binary's path. The
// working directory must lie inside the Go workspace. With pprof the binary
// also serves net/http/pprof when PprofEnv is set.
func Build(ctx context.Context, dir string, pprof bool) (string, error) {
	bin := filepath.Join(dir, "apiserver")
	args := []string{"build", "-o", bin}
	if pprof {
		overlay, err := writeOverlay(ctx, dir)
		if err != nil {
			return "", err
		}
		args = append(args, "-overlay", overlay)
	}
	args = append(args, Package)
	if _, err := goCmd(ctx, args...); err != nil {
		return "", fmt.Errorf("build apiserver: %w", err)
	}
	return bin, nil
}

// writeOverlay writes the pprof file and the overlay manifest that places it
// in the apiserver's main package directory.
// BuildKubelet compiles the kubelet into dir and returns the binary's path.
func BuildKubelet(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "kubelet")
	if _, err := goCmd(ctx, "build", "-o", bin, KubeletPackage); err != nil {
		return "", fmt.Errorf("build kubelet: %w", err)
	}
	return bin, nil
}

func writeOverlay(ctx context.Context, dir string) (string, error) {
	out, err := goCmd(ctx, "list", "-f", "{{.Dir}}", Package)
	if err != nil {
		return "", fmt.Errorf("locate apiserver package: %w", err)
	}
	pkgDir := strings.TrimSpace(out)
	src := filepath.Join(dir, "zz_bench_pprof.go")
	if err := os.WriteFile(src, []byte(pprofSource), 0o600); err != nil {
		return "", fmt.Errorf("write pprof overlay source: %w", err)
	}
	manifest, err := json.Marshal(map[string]map[string]string{
		"Replace": {filepath.Join(pkgDir, "zz_bench_pprof.go"): src},
	})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(path, manifest, 0o600); err != nil {
		return "", fmt.Errorf("write overlay manifest: %w", err)
	}
	return path, nil
}

// WorkspaceFile is the path of rel (e.g. configs/audit-policy.yaml) in the Go workspace the
// working directory lies in, checked to exist.
func WorkspaceFile(ctx context.Context, rel string) (string, error) {
	out, err := goCmd(ctx, "env", "GOWORK")
	if err != nil {
		return "", fmt.Errorf("locate the workspace: %w", err)
	}
	work := strings.TrimSpace(out)
	if work == "" || work == "off" {
		return "", fmt.Errorf("locate %s: not inside the minik8s Go workspace", rel)
	}
	path := filepath.Join(filepath.Dir(work), rel)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("locate %s: %w", rel, err)
	}
	return path, nil
}

func goCmd(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
