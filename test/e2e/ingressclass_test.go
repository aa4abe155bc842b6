package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
)

// ingressClassManifest is a backend (an echo pod behind the Service web), an IngressClass of
// another controller, and two Ingresses: one naming no class (so the default, ours) and one
// naming the other class.
const ingressClassManifest = `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: %[1]s, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: minik8s/echo:1.0
    ports: [{name: http, containerPort: 8080}]
    readinessProbe: {httpGet: {path: /, port: http}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: %[1]s}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: %[2]s}
spec: {controller: example.com/other}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ours, namespace: %[1]s}
spec:
  rules:
  - host: ours.%[1]s.example
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: theirs, namespace: %[1]s}
spec:
  ingressClassName: %[2]s
  rules:
  - host: theirs.%[1]s.example
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]
`

// TestIngressClassesOnMakeUp: the Ingress controller of make up made its IngressClass, the
// default one; an Ingress naming no class gets it and is served by nginx, and one naming
// another controller's class is left alone: no address, and nginx does not answer for its host.
func TestIngressClassesOnMakeUp(t *testing.T) {
	c := requireMakeUp(t)
	ns := c.namespace(t, "e2e-ingclass")
	other := ns + "-other"
	ks := c.kubectls(t)
	for _, k := range ks {
		out := k.ok(t, "get", "ingressclass", "nginx", "-o", `jsonpath={.spec.controller} {.metadata.annotations.ingressclass\.kubernetes\.io/is-default-class}`).stdout
		if strings.TrimSpace(out) != "minik8s.io/ingress-nginx true" {
			t.Errorf("%s kubectl: the nginx IngressClass is %q, want minik8s.io/ingress-nginx and default", k.name, out)
		}
	}
	file := filepath.Join(t.TempDir(), "ingresses.yaml")
	writeFile(t, file, fmt.Sprintf(ingressClassManifest, ns, other))
	ks[0].ok(t, "apply", "-f", file)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), time.Minute)
		defer cancel()
		_ = client.MustFor[*networkingv1.IngressClass, *networkingv1.IngressClassList](c.cl).Delete(ctx, "", other, metav1.DeleteOptions{})
	})
	c.waitPodRunning(t, ns, "web")

	ings := client.MustFor[*networkingv1.Ingress, *networkingv1.IngressList](c.cl)
	var ours *networkingv1.Ingress
	eventually(t, 3*time.Minute, "the Ingress of our class to get an address", func() bool {
		var err error
		ours, err = ings.Get(t.Context(), ns, "ours", metav1.GetOptions{})
		return err == nil && len(ours.Status.LoadBalancer.Ingress) == 1
	})
	if ours.Spec.IngressClassName == nil || *ours.Spec.IngressClassName != "nginx" {
		t.Errorf("the Ingress naming no class has class %v, want the default nginx", ours.Spec.IngressClassName)
	}
	addr := ours.Status.LoadBalancer.Ingress[0].IP
	get := func(host string) (int, string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
		if err != nil {
			return 0, "", err
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	oursHost, theirsHost := "ours."+ns+".example", "theirs."+ns+".example"
	eventually(t, 3*time.Minute, "nginx to answer for "+oursHost+" from the echo pod", func() bool {
		code, body, err := get(oursHost)
		return err == nil && code == http.StatusOK && strings.Contains(body, `"hostname"`)
	})
	// A change of ours made after the other class's Ingress existed: once nginx runs it, it
	// has seen that Ingress too.
	laterHost := "later." + ns + ".example"
	ks[0].ok(t, "-n", ns, "patch", "ingress", "ours", "--type=json", "-p",
		`[{"op":"add","path":"/spec/rules/-","value":{"host":"`+laterHost+`","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"web","port":{"number":80}}}}]}}}]`)
	eventually(t, 3*time.Minute, "nginx to answer for "+laterHost, func() bool {
		code, _, err := get(laterHost)
		return err == nil && code == http.StatusOK
	})
	if code, body, err := get(theirsHost); err != nil || code != http.StatusNotFound {
		t.Errorf("nginx answered %d for %s, another class's host (%v):\n%s", code, theirsHost, err, body)
	}
	theirs, err := ings.Get(t.Context(), ns, "theirs", metav1.GetOptions{})
	if err != nil || len(theirs.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("the other class's Ingress got an address: %+v (%v)", theirs.Status, err)
	}
	for _, k := range ks {
		out := k.ok(t, "get", "ingress", "-n", ns).stdout
		if row := rowOf(out, "theirs"); len(row) < 2 || row[1] != other {
			t.Errorf("%s kubectl get ingress: the other class's row %q\n%s", k.name, row, out)
		}
	}
}
