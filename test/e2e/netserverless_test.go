package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/client"
)

// runtimeImage is the base of every function image; scripts/images.sh builds it on this host.
const runtimeImage = "minik8s/python-runtime:latest"

// whereFunction answers the sum of a and b and the pod it ran in; three pods at all times, so
// they land on several nodes.
const whereFunction = `apiVersion: serverless.minik8s.io/v1
kind: Function
metadata:
  name: where
spec:
  handler: main.handle
  source:
    main.py: |
      import socket
      def handle(event):
          return {"sum": event["a"] + event["b"], "pod": socket.gethostname()}
  scale:
    minReplicas: 3
    maxReplicas: 3
  timeoutSeconds: 10
`

// serverlessSteps runs a Function on the cluster: built on this host, its image sent to the
// nodes that run its pods through their kubelets' /images, its pods Ready on two or more
// nodes, called through the gateway on the bridge address, our kubectl's execute and the real
// kubectl's raw invoke with answers from pods on several nodes; deleted, calls are 404.
func (c *netCluster) serverlessSteps(t *testing.T, step func(string, func(*testing.T))) {
	functions := client.MustFor[*serverlessv1.Function, *serverlessv1.FunctionList](c.cl)
	const name = "where"
	var fn *serverlessv1.Function
	podNode := map[string]string{} // pod name -> node name, of the function's Ready pods
	// nodesOf maps the pod names answers named to their nodes, failing on an unknown pod.
	nodesOf := func(t *testing.T, how string, pods []string) map[string]bool {
		t.Helper()
		nodes := map[string]bool{}
		for _, p := range pods {
			n, ok := podNode[p]
			if !ok {
				t.Errorf("%s: an answer from %q, not one of the function's pods %v", how, p, podNode)
			}
			nodes[n] = true
		}
		if len(nodes) < 2 {
			t.Errorf("%s: answers from pods %v on nodes %v, want two nodes or more", how, pods, nodes)
		}
		return nodes
	}

	step("serverless: a function's image reaches the nodes that run its pods, Ready on several", func(t *testing.T) {
		c.startServerless(t)
		path := filepath.Join(t.TempDir(), "where.yaml")
		writeFile(t, path, whereFunction)
		c.kubectlReal.ok(t, "-n", c.ns, "apply", "-f", path)
		fn = pollUntil(t, "function "+name, "built, with three ready pods", func() (*serverlessv1.Function, error) {
			return functions.Get(t.Context(), c.ns, name, metav1.GetOptions{})
		}, func(f *serverlessv1.Function) bool {
			return f.Status.Version >= 1 && f.Status.Image != "" && f.Status.ReadyReplicas == 3
		}, nil, c.serverlessTail)
		if want := "minik8s-fn/" + c.ns + "." + name + ":v1"; fn.Status.Image != want {
			t.Errorf("image %q, want %q", fn.Status.Image, want)
		}
		list, err := c.pods.List(t.Context(), c.ns, metav1.ListOptions{LabelSelector: serverlessv1.LabelFunction + "=" + name})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if p := &list.Items[i]; ready(p) && p.DeletionTimestamp == nil {
				podNode[p.Name] = p.Spec.NodeName
			}
		}
		nodes := map[string]bool{}
		for _, n := range podNode {
			nodes[n] = true
		}
		if len(podNode) != 3 || len(nodes) < 2 {
			t.Fatalf("the function's Ready pods run on %v, want three on two nodes or more", podNode)
		}
		// The nodes' engines got the image from this host (make cluster's nodes start with the
		// host's minik8s/* images only), and their kubelets say so.
		for _, n := range c.started {
			if !nodes[n.name] {
				continue
			}
			if out := n.docker(t, "image", "inspect", "--format", "{{.Id}}", fn.Status.Image); !strings.HasPrefix(out, "sha256:") {
				t.Errorf("%s's engine: docker image inspect %s printed %q", n.name, fn.Status.Image, out)
			}
		}
	})

	step("serverless: calls through the gateway and both kubectls answer from pods on several nodes", func(t *testing.T) {
		gw := &makeUpCluster{gateway: c.gateway}
		var pods []string
		for i := range 6 {
			r, err := gw.invoke(t.Context(), c.ns, name, fmt.Sprintf(`{"a": %d, "b": 1}`, i))
			if err != nil || r.code != http.StatusOK || r.body["sum"] != float64(i+1) || r.servedBy == "" || r.body["pod"] != r.servedBy {
				t.Fatalf("call %d through the gateway %s: %v %d %s (served by %q)", i, c.gateway, err, r.code, r.raw, r.servedBy)
			}
			pods = append(pods, r.servedBy)
		}
		nodesOf(t, "gateway", pods)

		// answers parses what a kubectl printed: the handler's JSON result.
		answer := func(t *testing.T, how, out string, want float64) string {
			t.Helper()
			var res struct {
				Sum float64 `json:"sum"`
				Pod string  `json:"pod"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || res.Sum != want {
				t.Fatalf("%s: printed %q, want the sum %v", how, out, want)
			}
			return res.Pod
		}
		pods = nil
		for i := range 6 {
			out := c.kubectl.ok(t, "execute", c.ns+"/"+name, fmt.Sprintf(`{"a": %d, "b": 2}`, i)).stdout
			pods = append(pods, answer(t, "kubectl execute", out, float64(i+2)))
		}
		nodesOf(t, "our kubectl execute", pods)

		pods = nil
		body := filepath.Join(t.TempDir(), "body.json")
		for i := range 6 {
			writeFile(t, body, fmt.Sprintf(`{"a": %d, "b": 3}`, i))
			out := c.kubectlReal.ok(t, "create", "--raw",
				"/apis/serverless.minik8s.io/v1/namespaces/"+c.ns+"/functions/"+name+"/invoke", "-f", body).stdout
			pods = append(pods, answer(t, "real kubectl create --raw .../invoke", out, float64(i+3)))
		}
		nodesOf(t, "real kubectl create --raw .../invoke", pods)
	})

	step("serverless: a deleted function's pods go and calls are 404", func(t *testing.T) {
		c.kubectl.ok(t, "-n", c.ns, "delete", "function", name)
		gw := &makeUpCluster{gateway: c.gateway}
		var last call
		eventually(t, podTimeout, "a 404 from the gateway for the deleted function", func() bool {
			r, err := gw.invoke(t.Context(), c.ns, name, `{"a": 1, "b": 1}`)
			last = r
			return err == nil && r.code == http.StatusNotFound
		})
		if !strings.Contains(last.raw, name) {
			t.Errorf("404 body %q does not name the function", last.raw)
		}
		if r := c.kubectl.run(t, "execute", c.ns+"/"+name, `{"a": 1, "b": 1}`); r.err == nil || !strings.Contains(r.stderr, "not found") {
			t.Errorf("our kubectl execute of the deleted function: %s", r)
		}
		eventually(t, podTimeout, "the function's pods gone", func() bool {
			list, err := c.pods.List(t.Context(), c.ns, metav1.ListOptions{LabelSelector: serverlessv1.LabelFunction + "=" + name})
			return err == nil && len(list.Items) == 0
		})
	})
}

// serverlessTail is the end of the serverless component's log, for a failed wait.
func (c *netCluster) serverlessTail() string {
	f := filepath.Join(c.home, "logs", "serverless.log")
	if !fileExists(f) {
		return ""
	}
	return "last lines of the serverless log:\n" + tailFile(f, 20) + "\n" + c.kubeletTails()
}
