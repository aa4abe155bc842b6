package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// streamWait bounds each wait for a streaming command to show something or to exit; generous
// because the machine is shared.
const streamWait = 60 * time.Second

// TestExecAttachCpPortForward drives exec, attach, cp and port-forward of the real kubectl
// and ours through a private apiserver (which proxies the upgraded connections) to a real
// kubelet on Docker with CNI. The pods come from testdata/stream-pods.yaml: tools (containers
// main and web: web serves a 10 MiB random file on the pod's 127.0.0.1:8080 only and
// echoes on :9000), console (an interactive sh with stdin and a TTY, the default container
// by annotation), done (Succeeded) and waiting (its image does not exist: Pending).
func TestExecAttachCpPortForward(t *testing.T) {
	n := startNode(t)
	n.applyTemplate(t, "stream-pods.yaml")
	for _, name := range []string{"tools", "console"} {
		n.waitPod(t, name, "running and ready", podRunning)
	}
	n.waitPod(t, "done", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	n.waitPod(t, "waiting", "Pending, waiting for its image", func(p *corev1.Pod) bool {
		st, ok := containerStatus(p, "main")
		return p.Status.Phase == corev1.PodPending && ok && st.State.Waiting != nil
	})
	ks := []kubectl{n.kubectlReal, n.kubectl}

	for _, step := range []struct {
		name string
		run  func(*testing.T, *testNode, kubectl)
	}{
		{"exec", testExec}, {"exec -it under a terminal", testExecTTY}, {"attach", testAttach},
		{"cp", testCp}, {"port-forward", testPortForward},
	} {
		t.Run(step.name, func(t *testing.T) {
			for _, k := range ks {
				t.Run(k.name, func(t *testing.T) { step.run(t, n, k) })
			}
		})
	}
}

func testExec(t *testing.T, n *testNode, k kubectl) {
	ns := []string{"-n", n.ns}

	r := k.ok(t, append(ns, "exec", "tools", "-c", "main", "--", "sh", "-c", "echo out; echo err >&2")...)
	if r.stdout != "out\n" || r.stderr != "err\n" {
		t.Errorf("%s kubectl exec: stdout and stderr not kept apart:\n%s", k.name, r)
	}

	// Without -c: the first container, with kubectl's notice; -c picks another; the
	// annotation picks without a notice.
	r = k.ok(t, append(ns, "exec", "tools", "--", "sh", "-c", "echo $WHO")...)
	if r.stdout != "main\n" || !strings.Contains(r.stderr, `Defaulted container "main" out of: main, web`) {
		t.Errorf("%s kubectl exec without -c: want main with kubectl's notice:\n%s", k.name, r)
	}
	r = k.ok(t, append(ns, "exec", "pod/tools", "-c", "web", "--", "sh", "-c", "echo $WHO")...)
	if r.stdout != "web\n" || r.stderr != "" {
		t.Errorf("%s kubectl exec pod/tools -c web:\n%s", k.name, r)
	}
	r = k.ok(t, append(ns, "exec", "svc/tools", "-c", "main", "--", "sh", "-c", "echo $WHO")...)
	if r.stdout != "main\n" {
		t.Errorf("%s kubectl exec svc/tools: want the pod its selector picks:\n%s", k.name, r)
	}
	r = k.ok(t, append(ns, "exec", "console", "--", "sh", "-c", "echo $WHO")...)
	if r.stdout != "shell\n" || r.stderr != "" {
		t.Errorf("%s kubectl exec into the annotated default container, quietly:\n%s", k.name, r)
	}

	// stdin reaches the command byte for byte, and its end ends cat.
	in := randomBytes(t, 1<<20)
	r = runWithStdin(t, k, in, append(ns, "exec", "-i", "tools", "-c", "main", "--", "cat")...)
	if r.err != nil || r.stdout != string(in) {
		t.Errorf("%s kubectl exec -i -- cat: exit %v, echoed %d of %d bytes (equal: %v)\nstderr:\n%s",
			k.name, r.err, len(r.stdout), len(in), r.stdout == string(in), r.stderr)
	}

	// -t without a terminal: kubectl's warning, and no TTY (no \r\n translation).
	r = runWithStdin(t, k, []byte("a\nb\n"), append(ns, "exec", "-i", "-t", "tools", "-c", "main", "--", "cat")...)
	if r.err != nil || r.stdout != "a\nb\n" || !strings.Contains(r.stderr, "Unable to use a TTY - input is not a terminal or the right kind of file") {
		t.Errorf("%s kubectl exec -it without a terminal:\n%s", k.name, r)
	}

	r = k.run(t, append(ns, "exec", "tools", "-c", "main", "--", "sh", "-c", "echo before; exit 3")...)
	if code := exitCode(r); code != 3 || r.stdout != "before\n" || r.stderr != "command terminated with exit code 3\n" {
		t.Errorf("%s kubectl exec of exit 3: want exit 3 with kubectl's line, got exit %d:\n%s", k.name, code, r)
	}

	// Refusals, each naming what is wrong: the apiserver's 400s and kubectl's own checks.
	for _, c := range []struct{ pod, container, want string }{
		{"tools", "nope", "container nope is not valid for pod tools"},
		{"done", "", "cannot exec into a container in a completed pod; current phase is Succeeded"},
		{"waiting", "", "container main in pod waiting is not running; the pod's phase is Pending"},
		{"absent", "", `pods "absent" not found`},
	} {
		args := []string{"-n", n.ns, "exec", c.pod}
		if c.container != "" {
			args = append(args, "-c", c.container)
		}
		r = k.run(t, append(args, "--", "true")...)
		if exitCode(r) != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s kubectl exec into %s: want exit 1 and %q:\n%s", k.name, c.pod, c.want, r)
		}
	}
}

// testExecTTY runs `exec -it -- sh` in a pseudo-terminal: a prompt, a command's output,
// the terminal's size and a change of it reach the shell, the exit status comes back, and
// the terminal leaves raw mode when kubectl ends.
func testExecTTY(t *testing.T, n *testNode, k kubectl) {
	s := startInTerminal(t, k, 33, 111, "-n", n.ns, "exec", "-it", "tools", "-c", "main", "--", "sh")
	s.waitFor(t, "a prompt", regexp.MustCompile(`# `))
	if s.canonical(t) {
		t.Errorf("%s kubectl exec -it: the terminal is not in raw mode during the session", k.name)
	}
	s.send(t, "echo $((6*7))\r")
	s.waitFor(t, "the shell's answer 42", regexp.MustCompile(`\r\n42\r\n`))
	s.send(t, "stty size\r")
	s.waitFor(t, "the terminal's size 33 111", regexp.MustCompile(`\r\n33 111\r\n`))
	// A resize sends SIGWINCH to kubectl, which tells the container.
	setWinsize(t, s.master, 40, 120)
	s.untilSeen(t, "the new size 40 120 after SIGWINCH", "stty size\r", regexp.MustCompile(`\r\n40 120\r\n`))
	s.send(t, "exit 5\r")
	err := s.wait(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 5 {
		t.Errorf("%s kubectl exec -it ended with %v, want exit status 5\noutput:\n%q", k.name, err, s.out.String())
	}
	if !strings.Contains(s.out.String(), "command terminated with exit code 5") {
		t.Errorf("%s kubectl exec -it: no kubectl line for exit 5 in:\n%q", k.name, s.out.String())
	}
	if !s.canonical(t) {
		t.Errorf("%s kubectl exec -it left the terminal in raw mode", k.name)
	}
}

// testAttach attaches to console's shell (stdin and a TTY): first under a terminal, typing
// a command; then with piped stdin, where kubectl warns that it cannot use a TTY. Neither
// session ends the shell: kubectl is stopped with SIGTERM.
func testAttach(t *testing.T, n *testNode, k kubectl) {
	marker := "at-" + k.name
	s := startInTerminal(t, k, 30, 100, "-n", n.ns, "attach", "-it", "console")
	s.waitFor(t, "kubectl's hint", regexp.MustCompile(`If you don't see a command prompt, try pressing enter\.`))
	s.untilSeen(t, "a prompt", "\r", regexp.MustCompile(`# `))
	s.send(t, "echo "+marker+"-$((6*7))\r")
	s.waitFor(t, "the command's output", regexp.MustCompile(`\r\n`+marker+`-42\r\n`))
	if strings.Contains(s.out.String(), "Defaulted container") {
		t.Errorf("%s kubectl attach: a notice although the annotation names the container:\n%q", k.name, s.out.String())
	}
	s.stop(t)
	if !s.canonical(t) {
		t.Errorf("%s kubectl attach -it left the terminal in raw mode", k.name)
	}

	p, errOut, stdin := startSession(t, k, true, "-n", n.ns, "attach", "-i", "console")
	if _, err := io.WriteString(stdin, "echo piped-"+marker+"-$((6*7))\n"); err != nil {
		t.Fatalf("write to %s kubectl attach -i: %v", k.name, err)
	}
	p.waitFor(t, "the piped command's output", regexp.MustCompile(`piped-`+marker+`-42`))
	p.stop(t)
	if !strings.Contains(errOut.String(), "Unable to use a TTY - input is not a terminal or the right kind of file") {
		t.Errorf("%s kubectl attach -i with a pipe: no TTY warning in stderr:\n%s", k.name, errOut.String())
	}

	r := k.run(t, "-n", n.ns, "attach", "done")
	if exitCode(r) != 1 || !strings.Contains(r.stderr, "current phase is Succeeded") {
		t.Errorf("%s kubectl attach to a Succeeded pod:\n%s", k.name, r)
	}
	r = k.run(t, "-n", n.ns, "attach", "console", "-c", "nope")
	if exitCode(r) != 1 || !strings.Contains(r.stderr, "container nope not found in pod console") {
		t.Errorf("%s kubectl attach to an unknown container:\n%s", k.name, r)
	}
}

// testCp copies a 1 MiB random file and a tree into the pod and back, byte for byte.
func testCp(t *testing.T, n *testNode, k kubectl) {
	dir := t.TempDir()
	src := filepath.Join(dir, "blob.bin")
	blob := randomBytes(t, 1<<20)
	if err := os.WriteFile(src, blob, 0o640); err != nil {
		t.Fatal(err)
	}
	remote := "/tmp/blob-" + k.name + ".bin"
	k.ok(t, "cp", src, n.ns+"/tools:"+remote, "-c", "main")
	sum := sha256.Sum256(blob)
	r := k.ok(t, "-n", n.ns, "exec", "tools", "-c", "main", "--", "sh", "-c", "sha256sum "+remote+" | cut -d' ' -f1; stat -c %a "+remote)
	if want := hex.EncodeToString(sum[:]) + "\n640\n"; r.stdout != want {
		t.Errorf("%s kubectl cp into the pod: sha256 and mode in the pod %q, want %q", k.name, r.stdout, want)
	}
	back := filepath.Join(dir, "back.bin")
	k.ok(t, "-n", n.ns, "cp", "tools:"+remote, back, "-c", "main")
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, blob) {
		t.Errorf("%s kubectl cp out of the pod: %d bytes (err %v), want the %d bytes sent", k.name, len(got), err, len(blob))
	}

	// A tree: nested and empty directories, files with their modes.
	tree := filepath.Join(dir, "tree")
	files := map[string]struct {
		mode fs.FileMode
		data []byte
	}{
		"a.txt":              {0o644, []byte("alpha\n")},
		"run.sh":             {0o755, []byte("#!/bin/sh\necho hi\n")},
		"secret":             {0o600, []byte("s3cret")},
		"sub/b.bin":          {0o644, randomBytes(t, 70000)},
		"sub/deeper/c.txt":   {0o640, []byte("gamma\n")},
		"sub/deeper/d-e f.x": {0o644, []byte("a name with a space")},
	}
	for rel, f := range files {
		p := filepath.Join(tree, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(tree, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	remoteTree := "/tmp/tree-" + k.name
	k.ok(t, "-n", n.ns, "cp", tree, "tools:"+remoteTree, "-c", "main")
	r = k.ok(t, "-n", n.ns, "exec", "tools", "-c", "main", "--", "sh", "-c",
		"cd "+remoteTree+" && find . -type f -exec stat -c '%n %a %s' {} + | sort && find . -type d | sort")
	var want []string
	for rel, f := range files {
		want = append(want, fmt.Sprintf("./%s %o %d", rel, f.mode, len(f.data)))
	}
	sort.Strings(want)
	want = append(want, ".", "./empty", "./sub", "./sub/deeper")
	if got := strings.Split(strings.TrimSpace(r.stdout), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s kubectl cp of a tree: in the pod\n%s\nwant\n%s", k.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	backTree := filepath.Join(dir, "tree-back")
	k.ok(t, "-n", n.ns, "cp", "tools:"+remoteTree, backTree, "-c", "main")
	for rel, f := range files {
		got, err := os.ReadFile(filepath.Join(backTree, rel))
		if err != nil || !bytes.Equal(got, f.data) {
			t.Errorf("%s kubectl cp of the tree back: %s has %d bytes (err %v), want %d", k.name, rel, len(got), err, len(f.data))
			continue
		}
		// The real kubectl writes what it receives with the default mode; ours keeps the
		// archive's, as tar does.
		if fi, err := os.Stat(filepath.Join(backTree, rel)); k.name == "ours" && err == nil && fi.Mode().Perm() != f.mode {
			t.Errorf("ours: %s came back with mode %v, want %v", rel, fi.Mode().Perm(), f.mode)
		}
	}
	if fi, err := os.Stat(filepath.Join(backTree, "empty")); err != nil || !fi.IsDir() {
		t.Errorf("%s kubectl cp of the tree back: no empty directory (%v)", k.name, err)
	}

	r = k.run(t, "-n", n.ns, "cp", filepath.Join(dir, "absent"), "tools:/tmp/x", "-c", "main")
	if exitCode(r) != 1 || !strings.Contains(r.stderr, "doesn't exist in local filesystem") {
		t.Errorf("%s kubectl cp of a missing local file:\n%s", k.name, r)
	}
}

// testPortForward forwards to tools: a 10 MiB download from web's server, which listens on
// the pod's 127.0.0.1 only, and a 10 MiB echo through port 9000 on a random local port.
func testPortForward(t *testing.T, n *testNode, k kubectl) {
	pod := n.waitPod(t, "tools", "running with an IP", func(p *corev1.Pod) bool { return podRunning(p) && p.Status.PodIP != "" })
	// The web server is out of reach from outside the pod: only a forward into the pod's
	// network namespace gets to it.
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort(pod.Status.PodIP, "8080"), 5*time.Second); err == nil {
		conn.Close()
		t.Fatalf("the pod's web server answers on %s:8080; it should listen on 127.0.0.1 only", pod.Status.PodIP)
	}
	wantSum := strings.TrimSpace(n.kubectlReal.ok(t, "-n", n.ns, "exec", "tools", "-c", "web", "--", "cat", "/www/big.sha256").stdout)

	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	local := strconv.Itoa(ports[0])
	s, errOut, _ := startSession(t, k, false, "-n", n.ns, "port-forward", "pod/tools", local+":8080", ":9000")
	defer func() {
		if t.Failed() {
			t.Logf("%s kubectl port-forward stdout:\n%s\nstderr:\n%s", k.name, s.out.String(), errOut.String())
		}
	}()
	s.waitFor(t, "the forward of "+local, regexp.MustCompile(`Forwarding from 127\.0\.0\.1:`+local+` -> 8080\n`))
	echoRe := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 9000\n`)
	s.waitFor(t, "the forward of a random port", echoRe)
	echoPort := echoRe.FindStringSubmatch(s.out.String())[1]

	client := &http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Get("http://127.0.0.1:" + local + "/big")
	if err != nil {
		t.Fatalf("%s kubectl port-forward: GET /big: %v", k.name, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(body)
	if err != nil || resp.StatusCode != http.StatusOK || len(body) != 10<<20 || hex.EncodeToString(sum[:]) != wantSum {
		t.Errorf("%s kubectl port-forward: GET /big: status %d, %d bytes (err %v), sha256 %x, want 200, %d bytes, sha256 %s",
			k.name, resp.StatusCode, len(body), err, sum, 10<<20, wantSum)
	}

	sent := randomBytes(t, 10<<20)
	got, err := echo(t, "127.0.0.1:"+echoPort, sent)
	if err != nil || !bytes.Equal(got, sent) {
		t.Errorf("%s kubectl port-forward: echo of %d bytes came back as %d bytes (equal: %v, err %v)", k.name, len(sent), len(got), bytes.Equal(got, sent), err)
	}
	s.waitFor(t, "kubectl's line for the connection", regexp.MustCompile(`Handling connection for `+local+`\n`))

	// An interrupt ends the forwarding cleanly.
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := s.wait(t); err != nil {
		t.Errorf("%s kubectl port-forward after an interrupt: %v, want exit 0", k.name, err)
	}

	// A Service's named port forwards to its target port on the pod it selects; one
	// address given, one listener.
	svc, svcErr, _ := startSession(t, k, false, "-n", n.ns, "port-forward", "--address", "127.0.0.1", "svc/tools", ":echo")
	svc.waitFor(t, "the forward to the service's target port", echoRe)
	sent = randomBytes(t, 1<<20)
	got, err = echo(t, "127.0.0.1:"+echoRe.FindStringSubmatch(svc.out.String())[1], sent)
	if err != nil || !bytes.Equal(got, sent) {
		t.Errorf("%s kubectl port-forward svc/tools: echo of %d bytes came back as %d bytes (err %v)", k.name, len(sent), len(got), err)
	}
	if err := svc.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := svc.wait(t); err != nil {
		t.Errorf("%s kubectl port-forward svc/tools after an interrupt: %v, want exit 0\nstderr:\n%s", k.name, err, svcErr.String())
	}
	if strings.Contains(svc.out.String(), "[::1]") {
		t.Errorf("%s kubectl port-forward --address 127.0.0.1 listened on ::1 too:\n%s", k.name, svc.out.String())
	}

	r := k.run(t, "-n", n.ns, "port-forward", "done", "8080")
	if exitCode(r) != 1 || !strings.Contains(r.stderr, "unable to forward port because pod is not running. Current status=Succeeded") {
		t.Errorf("%s kubectl port-forward to a Succeeded pod:\n%s", k.name, r)
	}
}

// echo sends data to addr while reading as much back, then closes.
func echo(t *testing.T, addr string, data []byte) ([]byte, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Minute)); err != nil {
		return nil, err
	}
	sendErr := make(chan error, 1)
	go func() {
		_, err := conn.Write(data)
		sendErr <- err
	}()
	got := make([]byte, len(data))
	_, err = io.ReadFull(conn, got)
	if serr := <-sendErr; err == nil {
		err = serr
	}
	return got, err
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// runWithStdin is kubectl.run with stdin.
func runWithStdin(t *testing.T, k kubectl, in []byte, args ...string) result {
	t.Helper()
	s, errOut, stdin := startSession(t, k, true, args...)
	go func() {
		_, _ = stdin.Write(in)
		stdin.Close()
	}()
	err := s.wait(t)
	return result{stdout: s.out.String(), stderr: errOut.String(), err: err}
}

// exitCode is the exit status of a run (run fails the test on any other error).
func exitCode(r result) int {
	var exit *exec.ExitError
	if errors.As(r.err, &exit) {
		return exit.ExitCode()
	}
	return 0
}
