package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// netnsEngine is a Docker engine of a test's own: containerd and dockerd in a network
// namespace whose eth0 (one end of a veth pair kept inside) holds the default route, state under dir, a cgroup parent of
// its own. Containers with the host's network there get the namespace's, so a compose stack
// on it (all host network) takes none of this host's ports, addresses, routes or iptables
// rules. scripts/node.sh starts make cluster's nodes' engines the same way.
type netnsEngine struct {
	netns  string // under /var/run/netns
	dir    string
	sock   string // dockerd's socket
	cgroup string // --cgroup-parent
	ip     string // eth0's address, the node's InternalIP
	procs  []*exec.Cmd
}

// startNetnsEngine makes the namespace and starts the engine; cleanup removes both, after a
// failure too.
func startNetnsEngine(t *testing.T, id string) *netnsEngine {
	t.Helper()
	dir := t.TempDir()
	e := &netnsEngine{netns: "mk8s-" + id, dir: dir, sock: filepath.Join(dir, "docker.sock"),
		cgroup: "/mk8s-" + id, ip: "192.168.231.2"}
	t.Cleanup(func() { e.remove(t) })

	execOK(t, "ip", "netns", "add", e.netns)
	for _, argv := range [][]string{
		{"ip", "link", "set", "lo", "up"},
		// A veth pair with both ends inside (some kernels, gVisor's among them, have no dummy
		// links): nothing of it is on the host.
		{"ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth1"},
		{"ip", "link", "set", "eth1", "up"},
		{"ip", "addr", "add", e.ip + "/24", "dev", "eth0"},
		{"ip", "link", "set", "eth0", "up"},
		{"ip", "route", "add", "default", "dev", "eth0"},
		{"sh", "-c", "echo 1 >/proc/sys/net/ipv4/ip_forward"},
	} {
		e.in(t, argv...)
	}

	driver := execOK(t, "docker", "info", "--format", "{{.Driver}}")
	ctrSock := filepath.Join(dir, "containerd.sock")
	conf := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[debug]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(dir, "containerd"), filepath.Join(dir, "containerd-state"), ctrSock, filepath.Join(dir, "containerd-opt"))
	writeFile(t, filepath.Join(dir, "containerd.toml"), conf)
	e.spawn(t, "containerd", "containerd", "--config", filepath.Join(dir, "containerd.toml"))
	eventually(t, time.Minute, "containerd of "+e.netns, func() bool {
		_, err := execErr(t.Context(), "ctr", "--address", ctrSock, "version")
		return err == nil
	})
	writeFile(t, filepath.Join(dir, "daemon.json"), "{}")
	e.spawn(t, "dockerd", "dockerd", "--config-file", filepath.Join(dir, "daemon.json"),
		"--data-root", filepath.Join(dir, "docker"), "--exec-root", filepath.Join(dir, "docker-exec"),
		"--pidfile", filepath.Join(dir, "docker.pid"), "-H", "unix://"+e.sock, "--containerd", ctrSock,
		"--exec-opt", "native.cgroupdriver=cgroupfs", "--cgroup-parent", e.cgroup, "--storage-driver", driver,
		"--bridge", "none", "--iptables=false", "--ip6tables=false")
	eventually(t, 2*time.Minute, "dockerd of "+e.netns, func() bool {
		_, err := execErr(t.Context(), "docker", "-H", "unix://"+e.sock, "version")
		return err == nil
	})
	return e
}

// in runs a command in the namespace and returns its output; it fails the test on error.
func (e *netnsEngine) in(t *testing.T, argv ...string) string {
	t.Helper()
	return execOK(t, append([]string{"nsenter", "--net=" + filepath.Join(netnsDir, e.netns), "--"}, argv...)...)
}

// inErr is in without failing the test.
func (e *netnsEngine) inErr(ctx context.Context, argv ...string) (string, error) {
	return execErr(ctx, append([]string{"nsenter", "--net=" + filepath.Join(netnsDir, e.netns), "--"}, argv...)...)
}

// spawn starts a daemon in the namespace, its output in <dir>/<name>.log.
func (e *netnsEngine) spawn(t *testing.T, name string, argv ...string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(e.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command("nsenter", append([]string{"--net=" + filepath.Join(netnsDir, e.netns), "--"}, argv...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	e.procs = append(e.procs, cmd)
}

// docker runs the docker CLI against this engine.
func (e *netnsEngine) docker(t *testing.T, args ...string) string {
	t.Helper()
	return execOK(t, append([]string{"docker", "-H", "unix://" + e.sock}, args...)...)
}

// remove stops every container, then dockerd and containerd (SIGTERM, SIGKILL after a minute),
// kills what is left in the engine's cgroups, unmounts what is left under its directory and
// deletes the cgroups and the namespace. Each step runs when an earlier one failed.
func (e *netnsEngine) remove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if ids, err := execErr(ctx, "docker", "-H", "unix://"+e.sock, "ps", "-aq"); err == nil && ids != "" {
		if _, err := execErr(ctx, append([]string{"docker", "-H", "unix://" + e.sock, "rm", "-f"}, strings.Fields(ids)...)...); err != nil {
			t.Logf("cleanup: %v", err)
		}
	}
	for i := len(e.procs) - 1; i >= 0; i-- {
		stopProcess(t, e.procs[i], time.Minute)
	}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*" + e.cgroup)
	if more, _ := filepath.Glob("/sys/fs/cgroup" + e.cgroup); len(more) > 0 {
		cgroups = append(cgroups, more...)
	}
	for _, d := range cgroups {
		_ = filepath.WalkDir(d, func(path string, de os.DirEntry, err error) error {
			if err == nil && !de.IsDir() && de.Name() == "cgroup.procs" {
				data, _ := os.ReadFile(path)
				for _, pid := range strings.Fields(string(data)) {
					_, _ = execErr(ctx, "kill", "-KILL", pid)
				}
			}
			return nil
		})
	}
	for _, m := range mountsUnder(t, e.dir) {
		if _, err := execErr(ctx, "umount", m); err != nil {
			if _, err := execErr(ctx, "umount", "-l", m); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
	}
	for _, d := range cgroups {
		removeCgroup(t, d)
	}
	if _, err := os.Stat(filepath.Join(netnsDir, e.netns)); err == nil {
		if _, err := execErr(ctx, "ip", "netns", "del", e.netns); err != nil {
			t.Logf("cleanup: %v", err)
		}
	}
}

// removeCgroup removes a cgroup directory, children first (a cgroup's files cannot be
// removed, only its empty directories).
func removeCgroup(t *testing.T, dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, de os.DirEntry, err error) error {
		if err == nil && de.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Remove(dirs[i]); err != nil && !os.IsNotExist(err) {
			t.Logf("cleanup: %v", err)
		}
	}
}

// stopProcess sends SIGTERM and waits up to grace, then SIGKILL.
func stopProcess(t *testing.T, cmd *exec.Cmd, grace time.Duration) {
	if cmd.Process == nil {
		return
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return
	case <-time.After(grace):
		t.Logf("cleanup: %s did not stop in %s; killing it", strings.Join(cmd.Args, " "), grace)
		_ = cmd.Process.Kill()
		<-done
	}
}
