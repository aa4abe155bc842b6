package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// monitoringDocs reads every object of configs/monitoring, as scripts/monitoring.sh renders
// them (with the configuration hash filled in), by kind/name.
func monitoringDocs(t *testing.T) map[string][]byte {
	t.Helper()
	// What install applies, rendered alone.
	out, err := exec.Command(filepath.Join("..", "..", "scripts", "monitoring.sh"), "render").Output()
	if err != nil {
		t.Fatalf("scripts/monitoring.sh render: %v", err)
	}
	docs := map[string][]byte{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		if head.Kind == "" {
			continue
		}
		docs[head.Kind+"/"+head.Metadata.Name] = doc
	}
	return docs
}

// The monitoring stack's Prometheus configuration uses discovery only, its jobs are unique,
// its rules name the alerts the docs promise, and the rendered Deployment carries a hash of
// both, which changes with either.
func TestMonitoringConfigs(t *testing.T) {
	docs := monitoringDocs(t)
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(docs["ConfigMap/prometheus-config"], &cm); err != nil {
		t.Fatal(err)
	}
	var prom struct {
		ScrapeConfigs []map[string]any `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["prometheus.yml"]), &prom); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	var jobs []string
	for _, sc := range prom.ScrapeConfigs {
		job, _ := sc["job_name"].(string)
		if slices.Contains(jobs, job) {
			t.Errorf("job %s twice", job)
		}
		jobs = append(jobs, job)
		if _, ok := sc["static_configs"]; ok {
			t.Errorf("job %s has static targets; every target must come from discovery", job)
		}
		if _, ok := sc["kubernetes_sd_configs"]; !ok {
			t.Errorf("job %s has no kubernetes_sd_configs", job)
		}
	}
	for _, want := range []string{"apiserver", "kubelet", "kubelet-cadvisor", "kubelet-probes", "kubeproxy", "node-exporter", "components", "kubernetes-pods"} {
		if !slices.Contains(jobs, want) {
			t.Errorf("no job %s (have %v)", want, jobs)
		}
	}
	var rules corev1.ConfigMap
	if err := yaml.UnmarshalStrict(docs["ConfigMap/prometheus-rules"], &rules); err != nil {
		t.Fatal(err)
	}
	for _, alert := range []string{"NodeDown", "PodCrashLooping", "FunctionErrorRate", "TargetDown"} {
		if !strings.Contains(rules.Data["minik8s.yml"], "alert: "+alert) {
			t.Errorf("no alert %s in the rules", alert)
		}
	}
	var dep appsv1.Deployment
	if err := yaml.UnmarshalStrict(docs["Deployment/prometheus"], &dep); err != nil {
		t.Fatal(err)
	}
	hash := dep.Spec.Template.Annotations["minik8s.io/config-hash"]
	if len(hash) != 16 {
		t.Errorf("rendered Deployment's config hash %q, want 16 hex digits", hash)
	}
	for _, want := range []string{"DaemonSet/node-exporter", "Deployment/dashboard"} {
		if _, ok := docs[want]; !ok {
			t.Errorf("no %s", want)
		}
	}
	var svc corev1.Service
	if err := yaml.UnmarshalStrict(docs["Service/dashboard"], &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].NodePort != 30300 {
		t.Errorf("dashboard Service: %+v, want a NodePort on 30300", svc.Spec)
	}
}
