package suite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ProfileResult is one CPU profile of the apiserver taken during a test.
type ProfileResult struct {
	Name string
	// Path is the saved profile, inside the work directory.
	Path string
	// Top is `go tool pprof -top` of it, or why there is none.
	Top string
}

type profile struct {
	done chan ProfileResult
}

// startProfile fetches a CPU profile of d from the apiserver's pprof
// listener while the test runs.
func (e *env) startProfile(ctx context.Context, name string, d time.Duration) *profile {
	p := &profile{done: make(chan ProfileResult, 1)}
	path := filepath.Join(e.cfg.Workdir, name+".pprof")
	go func() {
		res := ProfileResult{Name: name, Path: path}
		if err := e.fetchProfile(ctx, path, d); err != nil {
			res.Top = err.Error()
		} else {
			res.Top = pprofTop(ctx, e.binary, path)
		}
		p.done <- res
	}()
	return p
}

func (p *profile) wait() ProfileResult { return <-p.done }

func (e *env) fetchProfile(ctx context.Context, path string, d time.Duration) error {
	secs := max(int(d/time.Second), 1)
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	url := fmt.Sprintf("%s/profile?seconds=%d", e.proc.PprofURL, secs)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetch profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("fetch profile: %s: %s", resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		return fmt.Errorf("save profile: %w", err)
	}
	return f.Close()
}

// pprofTop summarises a profile by cumulative cost, which shows which
// request stage dominates better than flat cost does.
func pprofTop(ctx context.Context, binary, path string) string {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=40", binary, path)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Sprintf("go tool pprof: %v\n%s", err, out.String())
	}
	return out.String()
}
