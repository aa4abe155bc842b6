package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/defaults"
)

// debugged is the fixture pod with one ephemeral container, dbg, that targets web.
func debugged() *corev1.Pod {
	p := newPod()
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger("dbg")}
	return p
}

func debugger(name string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{TargetContainerName: "web", EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: "busybox", Stdin: true, TTY: true,
		ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}
}

func TestEphemeralContainersOnCreate(t *testing.T) {
	runCreate(t, Pod, defaults.Pod, newPod, []createCase[*corev1.Pod]{
		{name: "not on a new pod", mutate: func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger("dbg")}
		}, want: []problem{forb("spec.ephemeralContainers")}},
	})
}

func TestEphemeralContainersUpdate(t *testing.T) {
	ec := func(p *corev1.Pod, i int) *corev1.EphemeralContainer { return &p.Spec.EphemeralContainers[i] }
	add := func(p *corev1.Pod, c corev1.EphemeralContainer) {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, c)
	}
	runUpdate(t, Pod, defaults.Pod, debugged, []updateCase[*corev1.Pod]{
		{name: "one may be added", mutate: func(p *corev1.Pod) { add(p, debugger("dbg2")) }},
		{name: "order may change", mutate: func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger("dbg2"), p.Spec.EphemeralContainers[0]}
		}},
		{name: "without target", mutate: func(p *corev1.Pod) {
			c := debugger("dbg2")
			c.TargetContainerName = ""
			add(p, c)
		}},
		{name: "name of an app container", mutate: func(p *corev1.Pod) { add(p, debugger("web")) }, want: []problem{dup("spec.ephemeralContainers[1].name")}},
		{name: "name of another ephemeral container", mutate: func(p *corev1.Pod) { add(p, debugger("dbg")) }, want: []problem{
			dup("spec.ephemeralContainers[1].name"), forb("spec.ephemeralContainers[dbg]")}},
		{name: "name format", mutate: func(p *corev1.Pod) { add(p, debugger("Dbg")) }, want: []problem{inv("spec.ephemeralContainers[1].name")}},
		{name: "image required", mutate: func(p *corev1.Pod) {
			c := debugger("dbg2")
			c.Image = ""
			add(p, c)
		}, want: []problem{req("spec.ephemeralContainers[1].image")}},
		{name: "target must be an app or init container", mutate: func(p *corev1.Pod) {
			c := debugger("dbg2")
			c.TargetContainerName = "dbg"
			add(p, c)
		}, want: []problem{nf("spec.ephemeralContainers[1].targetContainerName")}},
		{name: "no ports, probes or resources", mutate: func(p *corev1.Pod) {
			c := debugger("dbg2")
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			add(p, c)
		}, want: []problem{forb("spec.ephemeralContainers[1].ports"), forb("spec.ephemeralContainers[1].resources"), forb("spec.ephemeralContainers[1].readinessProbe")}},
		{name: "no subPath", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			c := debugger("dbg2")
			c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "x"}}
			add(p, c)
		}, want: []problem{forb("spec.ephemeralContainers[1].volumeMounts[0].subPath"), forb("spec")}},
		{name: "existing may not be removed", mutate: func(p *corev1.Pod) { p.Spec.EphemeralContainers = nil }, want: []problem{forb("spec.ephemeralContainers")}},
		{name: "existing may not be changed", mutate: func(p *corev1.Pod) { ec(p, 0).Image = "busybox:1.37" }, want: []problem{forb("spec.ephemeralContainers[dbg]")}},
	})
}

// The messages are Kubernetes' own, with the container's name.
func TestEphemeralContainersUpdateMessages(t *testing.T) {
	old := debugged()
	defaults.Pod(old)
	removed := old.DeepCopy()
	removed.Spec.EphemeralContainers = nil
	changed := old.DeepCopy()
	changed.Spec.EphemeralContainers[0].Command = []string{"sh"}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{removed, `spec.ephemeralContainers: Forbidden: existing ephemeral containers "dbg" may not be removed`},
		{changed, `spec.ephemeralContainers[dbg]: Forbidden: existing ephemeral containers "dbg" may not be changed`},
	} {
		errs := validateEphemeralContainersUpdate(tc.pod, old)
		if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.want) || errs[0].Type != field.ErrorTypeForbidden {
			t.Errorf("got %v, want %q", errs, tc.want)
		}
	}
}
