package server

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/apiserver/internal/registry"
	metricsv1beta1 "minik8s.io/shared/apis/metrics/v1beta1"
)

// metrics.k8s.io is discovered and serves the usage a kubelet's /stats/summary reports: CPU
// as a rate of its cumulative counter, memory as the working set, pods selected by labels.
func TestResourceMetrics(t *testing.T) {
	h := newHarnessWith(t, func(c *Config) {
		c.Kubelet = &KubeletClient{HTTP: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, Token: "kubelet-token"}
		c.MetricsResolution = 300 * time.Millisecond
	})
	ns := h.namespace()
	var uid string
	start := time.Now().Add(-time.Minute)
	kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stats/summary" || r.Header.Get("Authorization") != "Bearer kubelet-token" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		now := time.Now()
		// Half a core since start, 32 MiB.
		fmt.Fprintf(w, `{"node":{"nodeName":"n"},"pods":[{"podRef":{"name":"p","namespace":%q,"uid":%q},"containers":[
			{"name":"app","cpu":{"time":%q,"usageCoreNanoSeconds":%d},"memory":{"workingSetBytes":%d}}]}]}`,
			ns, uid, now.Format(time.RFC3339Nano), now.Sub(start).Nanoseconds()/2, 32<<20)
	}))
	defer kubelet.Close()
	node := "metrics-" + registry.RandomSuffix()
	h.registerNode(node, strings.TrimPrefix(kubelet.URL, "https://"))
	var pod corev1.Pod
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/pods", "", podManifest("p", map[string]string{"app": "web"}), &pod)
	uid = string(pod.UID)

	var groups metav1.APIGroupList
	h.mustDo(http.StatusOK, "GET", "/apis", "", nil, &groups)
	found := false
	for _, g := range groups.Groups {
		found = found || (g.Name == "metrics.k8s.io" && g.PreferredVersion.Version == "v1beta1")
	}
	if !found {
		t.Fatalf("metrics.k8s.io not discovered: %+v", groups.Groups)
	}
	var resources metav1.APIResourceList
	h.mustDo(http.StatusOK, "GET", "/apis/metrics.k8s.io/v1beta1", "", nil, &resources)
	if len(resources.APIResources) != 2 || resources.APIResources[1].Kind != "PodMetrics" {
		t.Fatalf("metrics resources: %+v", resources.APIResources)
	}

	// The first question waits for the two scrapes a rate needs.
	var list metricsv1beta1.PodMetricsList
	h.mustDo(http.StatusOK, "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/"+ns+"/pods", "", nil, &list)
	if len(list.Items) != 1 {
		t.Fatalf("want pod p's metrics, got %+v", list)
	}
	pm := list.Items[0]
	cpu, mem := pm.Containers[0].Usage.Cpu().MilliValue(), pm.Containers[0].Usage.Memory().Value()
	if pm.Name != "p" || pm.Labels["app"] != "web" || cpu < 400 || cpu > 600 || mem != 32<<20 || pm.Window.Duration <= 0 {
		t.Fatalf("pod metrics: want p (app=web) at ~500m and 32Mi, got %+v", pm)
	}
	h.mustDo(http.StatusOK, "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/"+ns+"/pods?labelSelector=app%3Dother", "", nil, &list)
	if len(list.Items) != 0 {
		t.Errorf("label selector app=other matched %+v", list.Items)
	}
	var one metricsv1beta1.PodMetrics
	h.mustDo(http.StatusOK, "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/"+ns+"/pods/p", "", nil, &one)
	if one.Name != "p" || one.Kind != "PodMetrics" {
		t.Errorf("get pod metrics: %+v", one)
	}
	var nm metricsv1beta1.NodeMetrics
	h.mustDo(http.StatusOK, "GET", "/apis/metrics.k8s.io/v1beta1/nodes/"+node, "", nil, &nm)
	if c := nm.Usage.Cpu().MilliValue(); c < 400 || c > 600 || nm.Usage.Memory().Value() != 32<<20 {
		t.Errorf("node metrics: want the pod's usage, got %+v", nm.Usage)
	}

	var st metav1.Status
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/apis/metrics.k8s.io/v1beta1/namespaces/" + ns + "/pods/missing", 404},
		{"GET", "/apis/metrics.k8s.io/v1beta1/nodes/missing", 404},
		{"GET", "/apis/metrics.k8s.io/v1beta1/pods?labelSelector=a%3D%3D%3Db", 400},
		{"GET", "/apis/metrics.k8s.io/v1beta1/pods?watch=true", 405},
		{"DELETE", "/apis/metrics.k8s.io/v1beta1/namespaces/" + ns + "/pods/p", 405},
		{"GET", "/apis/metrics.k8s.io/v1beta1/services", 404},
	} {
		if code, _ := h.do(c.method, c.path, "", nil, &st); code != c.code {
			b, _ := json.Marshal(st)
			t.Errorf("%s %s: want %d, got %d %s", c.method, c.path, c.code, code, b)
		}
	}
}
