package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/defaults"
)

func TestPodCreate(t *testing.T) {
	c0 := func(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }
	runCreate(t, Pod, defaults.Pod, newPod, []createCase[*corev1.Pod]{
		{name: "valid"},
		{name: "name required", mutate: func(p *corev1.Pod) { p.Name = "" }, want: []problem{req("metadata.name")}},
		{name: "name not a subdomain", mutate: func(p *corev1.Pod) { p.Name = "Web_1" }, want: []problem{inv("metadata.name")}},
		{name: "namespace required", mutate: func(p *corev1.Pod) { p.Namespace = "" }, want: []problem{req("metadata.namespace")}},
		{name: "bad label", mutate: func(p *corev1.Pod) { p.Labels = map[string]string{"a b": "c"} }, want: []problem{inv("metadata.labels")}},
		{name: "no containers", mutate: func(p *corev1.Pod) { p.Spec.Containers = nil }, want: []problem{req("spec.containers")}},
		{name: "image required", mutate: func(p *corev1.Pod) { c0(p).Image = "" }, want: []problem{req("spec.containers[0].image")}},
		{name: "container name format", mutate: func(p *corev1.Pod) { c0(p).Name = "Web" }, want: []problem{inv("spec.containers[0].name")}},
		{name: "container name required", mutate: func(p *corev1.Pod) { c0(p).Name = "" }, want: []problem{req("spec.containers[0].name")}},
		{name: "container names unique across init", mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "web", Image: "busybox"}}
		}, want: []problem{dup("spec.containers[0].name")}},
		{name: "container port range", mutate: func(p *corev1.Pod) { c0(p).Ports[0].ContainerPort = 70000 }, want: []problem{inv("spec.containers[0].ports[0].containerPort")}},
		{name: "container port required", mutate: func(p *corev1.Pod) { c0(p).Ports[0].ContainerPort = 0 }, want: []problem{req("spec.containers[0].ports[0].containerPort")}},
		{name: "host port range", mutate: func(p *corev1.Pod) { c0(p).Ports[0].HostPort = -1 }, want: []problem{inv("spec.containers[0].ports[0].hostPort")}},
		{name: "port protocol", mutate: func(p *corev1.Pod) { c0(p).Ports[0].Protocol = "HTTP" }, want: []problem{nsup("spec.containers[0].ports[0].protocol")}},
		{name: "duplicate port name", mutate: func(p *corev1.Pod) {
			c0(p).Ports = append(c0(p).Ports, corev1.ContainerPort{Name: "http", ContainerPort: 81})
		}, want: []problem{dup("spec.containers[0].ports[1].name")}},
		{name: "restart policy", mutate: func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, want: []problem{nsup("spec.restartPolicy")}},
		{name: "dns policy", mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" }, want: []problem{nsup("spec.dnsPolicy")}},
		{name: "pull policy", mutate: func(p *corev1.Pod) { c0(p).ImagePullPolicy = "Maybe" }, want: []problem{nsup("spec.containers[0].imagePullPolicy")}},
		{name: "negative request", mutate: func(p *corev1.Pod) {
			c0(p).Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		}, want: []problem{inv("spec.containers[0].resources.requests[cpu]")}},
		{name: "request over limit", mutate: func(p *corev1.Pod) {
			c0(p).Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
			c0(p).Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}, want: []problem{inv("spec.containers[0].resources.requests[memory]")}},
		{name: "limit without request is fine", mutate: func(p *corev1.Pod) {
			c0(p).Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}},
		{name: "two volume sources", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/x"},
			}}}
		}, want: []problem{forb("spec.volumes[0].emptyDir")}},
		{name: "duplicate volume", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v"}, {Name: "v"}}
		}, want: []problem{dup("spec.volumes[1].name")}},
		{name: "mount of missing volume", mutate: func(p *corev1.Pod) {
			c0(p).VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, want: []problem{nf("spec.containers[0].volumeMounts[0].name")}},
		{name: "mount of existing volume", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data"}}
			c0(p).VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}},
		{name: "probe without handler", mutate: func(p *corev1.Pod) { c0(p).LivenessProbe = &corev1.Probe{} }, want: []problem{req("spec.containers[0].livenessProbe")}},
		{name: "probe with two handlers", mutate: func(p *corev1.Pod) {
			c0(p).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				Exec:      &corev1.ExecAction{Command: []string{"true"}},
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)},
			}}
		}, want: []problem{forb("spec.containers[0].readinessProbe.tcpSocket")}},
		{name: "probe http port", mutate: func(p *corev1.Pod) {
			c0(p).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(0)}}}
		}, want: []problem{inv("spec.containers[0].readinessProbe.httpGet.port")}},
		{name: "env name", mutate: func(p *corev1.Pod) { c0(p).Env = []corev1.EnvVar{{Name: "1BAD=", Value: "x"}} }, want: []problem{inv("spec.containers[0].env[0].name")}},
		{name: "env value and valueFrom", mutate: func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", Value: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		}, want: []problem{inv("spec.containers[0].env[0].valueFrom")}},
		{name: "toleration operator", mutate: func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Maybe"}}
		}, want: []problem{nsup("spec.tolerations[0].operator")}},
		{name: "active deadline", mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(0)) }, want: []problem{inv("spec.activeDeadlineSeconds")}},
	})
}

func TestPodUpdate(t *testing.T) {
	runUpdate(t, Pod, defaults.Pod, newPod, []updateCase[*corev1.Pod]{
		{name: "image may change", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }},
		{name: "labels may change", mutate: func(p *corev1.Pod) { p.Labels = map[string]string{"v": "2"} }},
		{name: "toleration may be added", mutate: func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
		}},
		{name: "ports may not change", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8080 }, want: []problem{forb("spec")}},
		{name: "containers may not be added", mutate: func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "busybox",
				ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile})
		}, want: []problem{forb("spec")}},
		{name: "deadline may shrink", mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(10)) }},
		{name: "name is immutable", mutate: func(p *corev1.Pod) { p.Name = "other" }, want: []problem{inv("metadata.name")}},
		{name: "update still validates", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, want: []problem{req("spec.containers[0].image")}},
	})
}

func TestPodUpdateMessage(t *testing.T) {
	old := newPod()
	n := newPod()
	n.Spec.Containers[0].Ports[0].ContainerPort = 8080
	errs := validatePodUpdate(n, old)
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeForbidden || errs[0].Detail != podUpdateMessage {
		t.Fatalf("got %v, want one Forbidden with Kubernetes' message", errs)
	}
}
