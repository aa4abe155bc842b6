package spec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/shared/apierror"
)

func pod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{
			Name: "app", Image: "echo:1", Command: []string{"/echo"}, Args: []string{"-port", "80"}, WorkingDir: "/w",
		}}},
	}
}

func TestSandbox(t *testing.T) {
	got := Builder{}.Sandbox(pod(), 2)
	want := runtime.ContainerConfig{
		Name:  "k8s_POD_web_default_u1_2",
		Image: DefaultSandboxImage,
		Labels: map[string]string{
			LabelPodUID: "u1", LabelPodName: "web", LabelPodNamespace: "default", LabelContainerName: "POD",
			LabelContainerHash: SandboxHash(pod()), LabelRestartCount: "2", LabelSandbox: "true",
		},
		Hostname: "web", NetworkMode: "none", IpcMode: "shareable",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Sandbox (-want +got):\n%s", diff)
	}
}

// A hostNetwork pod's sandbox is on the node's network and keeps the node's hostname; hostPID
// puts the sandbox and the app containers in the node's process namespace.
func TestSandboxHostNamespaces(t *testing.T) {
	p := pod()
	p.Spec.Hostname = "named"
	p.Spec.HostNetwork, p.Spec.HostPID = true, true
	got := Builder{}.Sandbox(p, 0)
	if got.NetworkMode != "host" || got.UTSMode != "host" || got.Hostname != "" || got.PidMode != "host" || got.IpcMode != "shareable" {
		t.Errorf("Sandbox of a hostNetwork, hostPID pod: network %q, uts %q, hostname %q, pid %q, ipc %q; want host, host, none, host, shareable",
			got.NetworkMode, got.UTSMode, got.Hostname, got.PidMode, got.IpcMode)
	}
	c, err := Builder{}.Container(t.Context(), p, &p.Spec.Containers[0], "sb1", 0, Env{}, nil)
	if err != nil {
		t.Fatalf("Container: %v", err)
	}
	if c.NetworkMode != "container:sb1" || c.PidMode != "host" {
		t.Errorf("Container of a hostPID pod: network %q, pid %q; want container:sb1, host", c.NetworkMode, c.PidMode)
	}
	p.Spec.HostPID = false
	if c, _ := (Builder{}).Container(t.Context(), p, &p.Spec.Containers[0], "sb1", 0, Env{}, nil); c.PidMode != "" {
		t.Errorf("Container without hostPID: pid %q, want its own", c.PidMode)
	}
}

func TestContainer(t *testing.T) {
	p := pod()
	p.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "A", Value: "1"},
		{Name: "B", Value: "$(A)-$$(A)-$(NOPE)"},
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
		{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "HOST", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "LBL", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
		{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"}}},
		{Name: "SEC", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "pw"}}},
	}
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
	}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}}
	b := Builder{Lookup: lookup{}}
	got, err := b.Container(t.Context(), p, &p.Spec.Containers[0], "sb1", 3, Env{PodIP: "10.244.0.5", HostIP: "192.168.1.2"}, map[string]string{"data": "/host/data"})
	if err != nil {
		t.Fatalf("Container: %v", err)
	}
	want := runtime.ContainerConfig{
		Name: "k8s_app_web_default_u1_3", Image: "echo:1", Command: []string{"/echo"}, Args: []string{"-port", "80"}, WorkingDir: "/w",
		Env: []string{"A=1", "B=1-$(A)-$(NOPE)", "POD=web", "NS=default", "UID=u1", "IP=10.244.0.5", "HOST=192.168.1.2",
			"NODE=n1", "LBL=web", "CM=v", "SEC=secret"},
		Labels: map[string]string{
			LabelPodUID: "u1", LabelPodName: "web", LabelPodNamespace: "default", LabelContainerName: "app",
			LabelContainerHash: Hash(&p.Spec.Containers[0]), LabelRestartCount: "3",
		},
		NetworkMode: "container:sb1", IpcMode: "container:sb1", UTSMode: "container:sb1",
		Mounts:    []runtime.Mount{{HostPath: "/host/data", ContainerPath: "/data", ReadOnly: true}},
		Resources: runtime.Resources{CPUQuota: 50000, CPUPeriod: 100000, CPUShares: 256, MemoryLimit: 64 << 20},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Container (-want +got):\n%s", diff)
	}
}

func TestContainerWithoutLookup(t *testing.T) {
	p := pod()
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"}}}}
	if _, err := (Builder{}).Container(t.Context(), p, &p.Spec.Containers[0], "sb", 0, Env{}, nil); err == nil {
		t.Fatal("Container with a configMap reference and no lookup succeeded, want an error")
	}
}

func TestResources(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name string
		in   corev1.ResourceRequirements
		want runtime.Resources
	}{
		{"none", corev1.ResourceRequirements{}, runtime.Resources{}},
		{"tiny request gets the minimum shares",
			corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1m")}},
			runtime.Resources{CPUShares: 2}},
		{"limits only default the request",
			corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("1Gi")}},
			runtime.Resources{CPUQuota: 200000, CPUPeriod: 100000, CPUShares: 2048, MemoryLimit: 1 << 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ResourcesFor(tt.in)); diff != "" {
				t.Errorf("ResourcesFor (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHash(t *testing.T) {
	base := pod().Spec.Containers[0]
	h := Hash(&base)
	if h2 := Hash(&base); h2 != h {
		t.Fatalf("Hash is not stable: %s then %s", h, h2)
	}
	tests := []struct {
		name    string
		mutate  func(c *corev1.Container)
		changes bool
	}{
		{"image", func(c *corev1.Container) { c.Image = "echo:2" }, true},
		{"args", func(c *corev1.Container) { c.Args = []string{"x"} }, true},
		{"env", func(c *corev1.Container) { c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}} }, true},
		{"ports", func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 80}} }, true},
		{"resources", func(c *corev1.Container) {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, true},
		{"volumeMounts", func(c *corev1.Container) { c.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v"}} }, true},
		{"workingDir", func(c *corev1.Container) { c.WorkingDir = "/x" }, true},
		{"stdin", func(c *corev1.Container) { c.Stdin = true }, true},
		{"stdinOnce", func(c *corev1.Container) { c.StdinOnce = true }, true},
		{"tty", func(c *corev1.Container) { c.TTY = true }, true},
		{"liveness probe", func(c *corev1.Container) { c.LivenessProbe = &corev1.Probe{PeriodSeconds: 3} }, false},
		{"readiness probe", func(c *corev1.Container) { c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 3} }, false},
		{"pull policy", func(c *corev1.Container) { c.ImagePullPolicy = corev1.PullNever }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *base.DeepCopy()
			tt.mutate(&c)
			if changed := Hash(&c) != h; changed != tt.changes {
				t.Errorf("hash changed = %v, want %v", changed, tt.changes)
			}
		})
	}
}

// A container without stdin or a TTY hashes as before those were hashed, so a kubelet
// upgrade does not restart every container.
func TestHashUnchangedWithoutStdinOrTTY(t *testing.T) {
	c := pod().Spec.Containers[0]
	if got, want := Hash(&c), "4575bd4efe7493ed"; got != want {
		t.Errorf("Hash = %s, want %s (the hash before stdin and tty counted)", got, want)
	}
}

func TestContainerStdinTTY(t *testing.T) {
	p := pod()
	p.Spec.Containers[0].Stdin, p.Spec.Containers[0].StdinOnce, p.Spec.Containers[0].TTY = true, true, true
	got, err := Builder{}.Container(t.Context(), p, &p.Spec.Containers[0], "sb1", 0, Env{}, nil)
	if err != nil {
		t.Fatalf("Container: %v", err)
	}
	if !got.Stdin || !got.StdinOnce || !got.TTY {
		t.Errorf("Container: Stdin %v, StdinOnce %v, TTY %v; want all true", got.Stdin, got.StdinOnce, got.TTY)
	}
}

func TestParse(t *testing.T) {
	cfg := Builder{}.Sandbox(pod(), 4)
	got, ok := Parse(cfg.Labels)
	if !ok {
		t.Fatal("Parse of sandbox labels: not ok")
	}
	want := Info{PodUID: "u1", PodName: "web", Namespace: "default", Container: "POD", Hash: SandboxHash(pod()), RestartCount: 4, Sandbox: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	if _, ok := Parse(map[string]string{"other": "x"}); ok {
		t.Error("Parse of foreign labels: ok, want not ok")
	}
}

func TestVolumes(t *testing.T) {
	root := t.TempDir()
	p := pod()
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	host := filepath.Join(root, "host", "made")
	p.Spec.Volumes = []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: host, Type: &dirOrCreate}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
	}
	got, err := Builder{RootDir: root, Lookup: lookup{}}.Volumes(t.Context(), p, Env{})
	if err != nil {
		t.Fatalf("Volumes: %v", err)
	}
	want := map[string]string{
		"scratch": filepath.Join(root, "pods/u1/volumes/empty-dir/scratch"),
		"h":       host,
		"cfg":     filepath.Join(root, "pods/u1/volumes/configmap/cfg"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Volumes (-want +got):\n%s", diff)
	}
	for _, dir := range []string{want["scratch"], host} {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Errorf("volume dir %s not created: %v", dir, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(want["cfg"], "k")); err != nil || string(b) != "v" {
		t.Errorf("configMap file k = %q, %v; want \"v\"", b, err)
	}
}

func TestClaimVolumes(t *testing.T) {
	root := t.TempDir()
	claimRoot = root
	if err := os.Mkdir(filepath.Join(root, "pv-bound"), 0o755); err != nil {
		t.Fatal(err)
	}
	claim := func(name string, ro bool) corev1.Volume {
		return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name, ReadOnly: ro}}}
	}
	b := Builder{RootDir: root, Lookup: lookup{}}
	for _, tc := range []struct {
		claim, err string
	}{
		{"pending", `volume data: persistentvolumeclaim "pending" is not bound (phase Pending)`},
		{"missing", `volume data: persistentvolumeclaim "missing": not found`},
		{"stolen", `volume data: persistentvolumeclaim "stolen": volume "pv-stolen" is not bound to it`},
	} {
		p := pod()
		p.Spec.Volumes = []corev1.Volume{claim(tc.claim, false)}
		if _, err := b.Volumes(t.Context(), p, Env{}); err == nil || err.Error() != tc.err {
			t.Errorf("claim %s: err %v, want %q", tc.claim, err, tc.err)
		}
	}
	for _, ro := range []bool{false, true} {
		p := pod()
		p.Spec.Volumes = []corev1.Volume{claim("bound", ro)}
		c := &p.Spec.Containers[0]
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		vols, err := b.Volumes(t.Context(), p, Env{})
		if err != nil {
			t.Fatal(err)
		}
		if vols["data"] != filepath.Join(root, "pv-bound") {
			t.Fatalf("claim path %q", vols["data"])
		}
		cfg, err := b.Container(t.Context(), p, c, "sandbox", 0, Env{}, vols)
		if err != nil {
			t.Fatal(err)
		}
		want := []runtime.Mount{{HostPath: filepath.Join(root, "pv-bound"), ContainerPath: "/data", ReadOnly: ro}}
		if d := cmp.Diff(want, cfg.Mounts); d != "" {
			t.Errorf("readOnly %t: mounts (-want +got):\n%s", ro, d)
		}
	}
}

type lookup struct{}

func (lookup) ConfigMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	if name != "cfg" {
		return nil, apierror.NotFound("", "configmaps", name)
	}
	return &corev1.ConfigMap{Data: map[string]string{"k": "v"}}, nil
}

// Claims: "bound" is bound to the volume "pv-bound" (a hostPath under the test's directory
// in claimRoot), "pending" is not bound, "stolen" names a volume bound to another claim.
var claimRoot string

func (lookup) PersistentVolumeClaim(_ context.Context, _, name string) (*corev1.PersistentVolumeClaim, error) {
	switch name {
	case "bound", "stolen":
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-" + name}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}, nil
	case "pending":
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}, nil
	}
	return nil, errors.New("not found")
}

func (lookup) PersistentVolume(_ context.Context, name string) (*corev1.PersistentVolume, error) {
	dir := corev1.HostPathDirectory
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		ClaimRef:               &corev1.ObjectReference{UID: "uid-bound"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(claimRoot, name), Type: &dir}}}}
	return pv, nil
}

func (lookup) Secret(_ context.Context, _, name string) (*corev1.Secret, error) {
	if name != "s" {
		return nil, apierror.NotFound("", "secrets", name)
	}
	return &corev1.Secret{Data: map[string][]byte{"pw": []byte("secret")}}, nil
}

func TestContainerResolvConf(t *testing.T) {
	b := Builder{RootDir: "/var/lib/kubelet"}
	resolv := b.ResolvConfPath("u1")
	if resolv != "/var/lib/kubelet/pods/u1/resolv.conf" {
		t.Errorf("ResolvConfPath = %q", resolv)
	}
	for _, tt := range []struct {
		name   string
		own    bool // the pod mounts a volume at /etc/resolv.conf itself
		env    string
		mounts []runtime.Mount
	}{
		{"the pod's resolv.conf", false, resolv, []runtime.Mount{{HostPath: resolv, ContainerPath: "/etc/resolv.conf"}}},
		{"none: the runtime's", false, "", nil},
		{"the pod's own volume there wins", true, resolv, []runtime.Mount{{HostPath: "/host/dns", ContainerPath: "/etc/resolv.conf"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := pod()
			if tt.own {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "dns", MountPath: "/etc/resolv.conf"}}
			}
			got, err := b.Container(t.Context(), p, &p.Spec.Containers[0], "sb1", 0, Env{ResolvConf: tt.env}, map[string]string{"dns": "/host/dns"})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.mounts, got.Mounts); d != "" {
				t.Errorf("mounts (-want +got):\n%s", d)
			}
		})
	}
}
