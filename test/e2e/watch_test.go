package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// watchTimeout bounds `get -w`; the test ends it earlier once it has seen what it waits for.
const watchTimeout = 2 * time.Minute

// TestGetWatch streams `get pods -w` while a pod is created, labelled and deleted, and
// checks that one line per change arrives, showing the labels of that moment.
func TestGetWatch(t *testing.T) {
	srv := sharedServer(t)
	ks := kubectls(t, srv)
	for _, k := range ks {
		t.Run(k.name, func(t *testing.T) {
			ns := "e2e-watch-" + k.name
			createNamespace(t, ks[0], ns)
			pod := "e2e-pod-" + k.name
			file := render(t, t.TempDir(), "pod.yaml", manifest{Suffix: k.name, NS: ns, Rev: "1"})

			// An anchor pod gives the initial list a row to print, which tells the test that
			// kubectl has listed and is watching from the list's resourceVersion, so later
			// changes cannot be missed. (The real kubectl prints nothing for an empty list.)
			anchor := render(t, t.TempDir(), "pod.yaml", manifest{Suffix: "anchor", NS: ns, Rev: "1"})
			k.ok(t, "create", "-f", anchor)

			ctx, cancel := context.WithTimeout(t.Context(), watchTimeout)
			defer cancel()
			var out, errOut lockedBuffer
			cmd := k.command(ctx, "-n", ns, "get", "pods", "-w", "--show-labels")
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				cancel()
				<-exited
			}()
			eventually(t, 30*time.Second, "get -w to list the anchor pod", func() bool {
				return strings.Contains(out.String(), "e2e-pod-anchor ")
			})

			k.ok(t, "create", "-f", file)
			k.ok(t, "-n", ns, "patch", "pod", pod, "--type", "merge", "-p", `{"metadata":{"labels":{"color":"blue"}}}`)
			k.ok(t, "-n", ns, "delete", "pod", pod)

			podLines := func() []string {
				var ls []string
				for _, l := range strings.Split(out.String(), "\n") {
					if strings.HasPrefix(l, pod+" ") {
						ls = append(ls, l)
					}
				}
				return ls
			}
			eventually(t, 60*time.Second, "three watch lines for "+pod, func() bool {
				select {
				case err := <-exited:
					exited <- err
					return true // reported below with the output
				default:
				}
				return len(podLines()) >= 3
			})
			lines := podLines()
			if len(lines) != 3 {
				t.Fatalf("want 3 lines for %s (added, labelled, deleted), got %d\nstdout:\n%s\nstderr:\n%s",
					pod, len(lines), out.String(), errOut.String())
			}
			for i, wantBlue := range []bool{false, true, true} {
				if got := strings.Contains(lines[i], "color=blue"); got != wantBlue {
					t.Errorf("line %d %q: shows color=blue = %t, want %t", i+1, lines[i], got, wantBlue)
				}
				if !strings.Contains(lines[i], "app=e2e") {
					t.Errorf("line %d %q lacks the pod's labels", i+1, lines[i])
				}
			}
			if !strings.Contains(out.String(), "LABELS") {
				t.Errorf("no header with a LABELS column:\n%s", out.String())
			}
			select {
			case err := <-exited:
				t.Errorf("get -w exited by itself before its deadline: %v\nstderr:\n%s", err, errOut.String())
				exited <- err
			default:
			}
		})
	}
}
