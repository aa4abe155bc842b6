package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// composeTestEnv opts in to TestComposeStack. Its first run builds the Go toolchain's,
// modules' and components' image layers (about 20 minutes on two cores; a source change
// costs about 5), so it runs alone, with a timeout of its own: make test-compose-stack.
const composeTestEnv = "MINIK8S_E2E_COMPOSE"

// composeImages are the images docker-compose.yml builds (its image: names, tag latest) and
// the ones its node's pods need.
var composeImages = []string{
	"minik8s-compose/etcd", "minik8s-compose/rabbitmq", "minik8s-compose/redis",
	"minik8s-compose/control-plane", "minik8s-compose/node",
	"minik8s/pause:1.0", "minik8s/echo:1.0",
}

// composeServices are docker-compose.yml's services, each with a health check.
var composeServices = []string{"etcd", "rabbitmq", "redis", "apiserver", "scheduler", "controller-manager",
	"serverless", "kubelet", "kubeproxy"}

// TestComposeStack runs docker-compose.yml as a user would, but on an engine of its own in a
// network namespace (every service uses the host's network, and this host's make up cluster
// holds those ports): the images are built on this host's engine with scripts/compose.sh build
// and copied in, `up -d` starts the stack, every service turns healthy, the node is Ready, a
// Deployment's pod answers through its Service's ClusterIP, `scripts/compose.sh down` leaves
// no container (pods included) but the data, and `down -v` removes the data too.
func TestComposeStack(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the compose stack builds images and runs an engine of its own")
	}
	if os.Getenv(composeTestEnv) == "" {
		t.Skipf("builds the compose stack's images (about 20 minutes the first time) and runs it; set %s=1 to run it (make test-compose-stack does)", composeTestEnv)
	}
	requireComposeTools(t)
	began := time.Now()
	defer func() { t.Logf("TestComposeStack took %s", time.Since(began).Round(time.Second)) }()

	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	hostEnv := composeEnv(nil)
	// Images: on this host's engine (the build cache stays between runs), then into the
	// test's engine.
	runLogged(t, hostEnv, 10*time.Minute, filepath.Join(repo, "scripts", "images.sh"), "--if-missing", "echo")
	runLogged(t, hostEnv, 40*time.Minute, filepath.Join(repo, "scripts", "compose.sh"), "build")
	t.Logf("images built after %s", time.Since(began).Round(time.Second))

	id := fmt.Sprintf("cmp%d", time.Now().UnixNano()%1_000_000)
	e := startNetnsEngine(t, id)
	load := fmt.Sprintf("docker save %s | docker -H unix://%s load -q", strings.Join(composeImages, " "), e.sock)
	runLogged(t, hostEnv, 10*time.Minute, "bash", "-o", "pipefail", "-c", load)
	t.Logf("images loaded after %s", time.Since(began).Round(time.Second))

	home, data := filepath.Join(e.dir, "home"), filepath.Join(e.dir, "data")
	node := "compose-" + id
	project := "mk8s-" + id
	env := composeEnv([]string{
		"DOCKER_HOST=unix://" + e.sock, "COMPOSE_PROJECT_NAME=" + project,
		"MINIK8S_COMPOSE_HOME=" + home, "MINIK8S_COMPOSE_DATA=" + data,
		"MINIK8S_DOCKER_SOCK=" + e.sock, "MINIK8S_NODE_NAME=" + node,
	})
	compose := append(composeCommand(t), "-f", filepath.Join(repo, "docker-compose.yml"))
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := runIn(repo, env, 2*time.Minute, append(compose, "logs", "--no-color", "--tail=40")...)
			t.Logf("compose logs:\n%s", out)
		}
	})

	// Plain compose, as after make compose: the images are there, nothing is pulled.
	runLogged(t, env, 10*time.Minute, append(compose, "up", "-d")...)
	eventually(t, 6*time.Minute, "every service of the stack healthy", func() bool {
		return composeHealthy(t, e, project)
	})
	t.Logf("stack healthy after %s", time.Since(began).Round(time.Second))

	kubeconfig := filepath.Join(home, "kubeconfig")
	kubectl := func(stdin string, args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), "nsenter", append([]string{"--net=" + filepath.Join(netnsDir, e.netns), "--",
			realKubectl, "--kubeconfig", kubeconfig}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+e.dir, "KUBECACHEDIR="+filepath.Join(e.dir, "kubecache"))
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	eventually(t, 3*time.Minute, "node "+node+" Ready with its InternalIP", func() bool {
		out, err := kubectl("", "get", "node", node, "-o", "json")
		if err != nil {
			return false
		}
		var n corev1.Node
		return json.Unmarshal([]byte(out), &n) == nil && nodeReady(&n) && internalIP(&n) == e.ip
	})

	if out, err := kubectl(composeManifest, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("%s", out)
	}
	var clusterIP string
	eventually(t, time.Minute, "Service echo's ClusterIP", func() bool {
		out, err := kubectl("", "get", "service", "echo", "-o", "jsonpath={.spec.clusterIP}")
		clusterIP = strings.TrimSpace(out)
		return err == nil && clusterIP != ""
	})
	var last string
	eventually(t, 4*time.Minute, "the echo pod answering at http://"+clusterIP+":80 in the stack's network", func() bool {
		out, err := e.inErr(t.Context(), "curl", "-fsS", "--max-time", "3", "http://"+clusterIP+":80/")
		last = out
		return err == nil
	})
	t.Logf("echo through the Service: %.200s", last)
	pods, err := kubectl("", "get", "pods", "-l", "app=echo", "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pods, node) || !strings.Contains(pods, "Running") {
		t.Fatalf("the echo pod does not run on %s:\n%s", node, pods)
	}
	if len(e.docker(t, "ps", "-q", "--filter", "label=minik8s.io/node="+node)) == 0 {
		t.Fatal("no pod container labelled with the node runs on the stack's engine")
	}

	// down: no container is left, pods' included; the volumes are.
	runLogged(t, env, 5*time.Minute, filepath.Join(repo, "scripts", "compose.sh"), "down")
	if left := e.docker(t, "ps", "-a", "--format", "{{.Names}}"); left != "" {
		t.Fatalf("containers left after down:\n%s", left)
	}
	volumes := strings.Fields(e.docker(t, "volume", "ls", "-q", "--filter", "label=com.docker.compose.project="+project))
	if len(volumes) != 4 {
		t.Fatalf("after down: volumes %v, want the stack's 4 (etcd, rabbitmq, redis, cni-state)", volumes)
	}
	if _, err := os.Stat(filepath.Join(home, "kubeconfig")); err != nil {
		t.Fatalf("after down the state directory should stay: %v", err)
	}

	// down -v: the volumes and the state directories go too.
	runLogged(t, env, 5*time.Minute, filepath.Join(repo, "scripts", "compose.sh"), "down", "-v")
	if left := e.docker(t, "volume", "ls", "-q", "--filter", "label=com.docker.compose.project="+project); left != "" {
		t.Fatalf("volumes left after down -v:\n%s", left)
	}
	for _, d := range []string{home, data} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("%s left after down -v (stat: %v)", d, err)
		}
	}
}

// composeManifest is a Deployment of one echo pod and its Service.
const composeManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: echo
  namespace: default
spec:
  replicas: 1
  selector:
    matchLabels: {app: echo}
  template:
    metadata:
      labels: {app: echo}
    spec:
      containers:
      - name: echo
        image: minik8s/echo:1.0
        ports:
        - containerPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: echo
  namespace: default
spec:
  selector: {app: echo}
  ports:
  - port: 80
    targetPort: 8080
`

// requireComposeTools fails the test unless it runs as root with a compose command, this
// host's Docker and what an engine in a namespace needs.
func requireComposeTools(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("TestComposeStack makes a network namespace and runs dockerd: run it as root")
	}
	for _, tool := range []string{"ip", "nsenter", "curl", "containerd", "ctr", "dockerd", "docker", realKubectl} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("TestComposeStack needs %s (make up installs it): %v", tool, err)
		}
	}
	if _, err := execErr(t.Context(), "docker", "info"); err != nil {
		t.Fatalf("TestComposeStack builds its images on this host's Docker: %v", err)
	}
	composeCommand(t)
}

// composeCommand is `docker compose` where the plugin is installed, else docker-compose.
func composeCommand(t *testing.T) []string {
	t.Helper()
	if _, err := execErr(t.Context(), "docker", "compose", "version"); err == nil {
		return []string{"docker", "compose"}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}
	}
	t.Fatal("TestComposeStack needs 'docker compose' or docker-compose")
	return nil
}

// composeEnv is this process's environment without the settings the scripts and compose
// read, plus extra.
func composeEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DOCKER_HOST" || strings.HasPrefix(k, "COMPOSE_") || strings.HasPrefix(k, "MINIK8S_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// composeHealthy reports whether every service of the project has one running, healthy
// container on the engine; it logs the states while some are not.
func composeHealthy(t *testing.T, e *netnsEngine, project string) bool {
	t.Helper()
	out := e.docker(t, "ps", "-a", "--filter", "label=com.docker.compose.project="+project,
		"--format", `{{.Label "com.docker.compose.service"}} {{.Status}}`)
	healthy := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		svc, status, _ := strings.Cut(line, " ")
		if strings.HasPrefix(status, "Up") && strings.Contains(status, "(healthy)") {
			healthy[svc] = true
		}
	}
	for _, s := range composeServices {
		if !healthy[s] {
			return false
		}
	}
	return true
}

// runLogged runs argv with env from the repository root and fails the test with its output
// on error or after timeout.
func runLogged(t *testing.T, env []string, timeout time.Duration, argv ...string) {
	t.Helper()
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	out, err := runIn(root, env, timeout, argv...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}

func runIn(dir string, env []string, timeout time.Duration, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("timed out after %s: %w", timeout, err)
	}
	return string(out), err
}

// The compose images' module layer copies the go.mod of every module go.work uses: one
// missing fails go mod download there, which only the slow TestComposeStack would show.
func TestComposeDockerfileModules(t *testing.T) {
	work, err := os.ReadFile(filepath.Join("..", "..", "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile(filepath.Join("..", "..", "build", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var modules []string
	in := false
	for line := range strings.Lines(string(work)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "use ("):
			in = true
		case in && line == ")":
			in = false
		case in && strings.HasPrefix(line, "./"):
			modules = append(modules, strings.TrimPrefix(line, "./"))
		}
	}
	if len(modules) < 5 {
		t.Fatalf("read %d modules from go.work: %v", len(modules), modules)
	}
	for _, m := range modules {
		if !strings.Contains(string(dockerfile), fmt.Sprintf("COPY %s/go.mod %s/go.sum %s/", m, m, m)) {
			t.Errorf("build/Dockerfile does not copy %s/go.mod and go.sum before go mod download", m)
		}
	}
}
