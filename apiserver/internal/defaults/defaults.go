package defaults

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/imageref"
)

// Pod defaults a Pod.
func Pod(p *corev1.Pod) {
	if p.Spec.EnableServiceLinks == nil {
		p.Spec.EnableServiceLinks = ptr(true)
	}
	if p.Spec.Priority == nil {
		p.Spec.Priority = ptr(int32(0))
	}
	// Kubernetes treats limits without requests as guaranteed: requests default to limits.
	for i := range p.Spec.Containers {
		requestsFromLimits(&p.Spec.Containers[i].Resources)
	}
	for i := range p.Spec.InitContainers {
		requestsFromLimits(&p.Spec.InitContainers[i].Resources)
	}
	podSpec(&p.Spec, true)
}

func requestsFromLimits(r *corev1.ResourceRequirements) {
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[name] = limit.DeepCopy()
	}
}

// podSpec defaults a pod's or a template's spec. restartPolicy is left empty when
// defaultRestart is false: a Job's template must say OnFailure or Never itself.
func podSpec(s *corev1.PodSpec, defaultRestart bool) {
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" && defaultRestart {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	if s.HostNetwork {
		// A pod on the host network uses the host's ports, so each hostPort equals its port.
		for i := range s.Containers {
			for j := range s.Containers[i].Ports {
				p := &s.Containers[i].Ports[j]
				if p.HostPort == 0 {
					p.HostPort = p.ContainerPort
				}
			}
		}
	}
	for i := range s.InitContainers {
		container(&s.InitContainers[i])
	}
	for i := range s.Containers {
		container(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		container((*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon))
	}
	for i := range s.Volumes {
		volume(&s.Volumes[i])
	}
}

func container(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = imageref.PullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		probe(p)
	}
}

func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = "/"
		}
		if h.Scheme == "" {
			h.Scheme = corev1.URISchemeHTTP
		}
	}
}

func volume(v *corev1.Volume) {
	vs := &v.VolumeSource
	if *vs == (corev1.VolumeSource{}) {
		// A volume that names no source is scratch space, as in Kubernetes.
		vs.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if vs.Secret != nil && vs.Secret.DefaultMode == nil {
		vs.Secret.DefaultMode = ptr(corev1.SecretVolumeSourceDefaultMode)
	}
	if vs.ConfigMap != nil && vs.ConfigMap.DefaultMode == nil {
		vs.ConfigMap.DefaultMode = ptr(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if vs.HostPath != nil && vs.HostPath.Type == nil {
		vs.HostPath.Type = ptr(corev1.HostPathUnset)
	}
}

// Secret defaults a Secret.
func Secret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

// StorageClass defaults a StorageClass.
func StorageClass(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		sc.ReclaimPolicy = ptr(corev1.PersistentVolumeReclaimDelete)
	}
	if sc.VolumeBindingMode == nil {
		sc.VolumeBindingMode = ptr(storagev1.VolumeBindingImmediate)
	}
}

// PersistentVolume defaults a PersistentVolume.
func PersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptr(corev1.PersistentVolumeFilesystem)
	}
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if hp := pv.Spec.HostPath; hp != nil && hp.Type == nil {
		hp.Type = ptr(corev1.HostPathUnset)
	}
}

// PersistentVolumeClaim defaults a PersistentVolumeClaim.
func PersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Spec.VolumeMode == nil {
		pvc.Spec.VolumeMode = ptr(corev1.PersistentVolumeFilesystem)
	}
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
}

// Node defaults a Node.
func Node(n *corev1.Node) {
	// Until the kubelet reports allocatable, everything it has is allocatable.
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = make(corev1.ResourceList, len(n.Status.Capacity))
		for k, v := range n.Status.Capacity {
			n.Status.Allocatable[k] = v.DeepCopy()
		}
	}
}

// Namespace defaults a Namespace.
func Namespace(ns *corev1.Namespace) {
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
	if len(ns.Spec.Finalizers) == 0 {
		ns.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
	}
	// Kubernetes labels every namespace with its own name so selectors can pick namespaces.
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
}

// Function defaults a Function.
func Function(f *serverlessv1.Function) {
	if f.Spec.Runtime == "" {
		f.Spec.Runtime = serverlessv1Runtime
	}
	s := &f.Spec.Scale
	if s.MinReplicas == nil {
		s.MinReplicas = ptr(int32(0))
	}
	if s.MaxReplicas == nil {
		s.MaxReplicas = ptr(int32(10))
	}
	if s.TargetConcurrency == nil {
		s.TargetConcurrency = ptr(int32(10))
	}
	if s.MaxQueue == nil {
		s.MaxQueue = ptr(int32(100))
	}
	if s.StableWindowSeconds == nil {
		s.StableWindowSeconds = ptr(int32(60))
	}
	if s.IdleSeconds == nil {
		s.IdleSeconds = ptr(int32(60))
	}
	if f.Spec.TimeoutSeconds == nil {
		f.Spec.TimeoutSeconds = ptr(int32(30))
	}
	for i := range f.Spec.Schedules {
		if f.Spec.Schedules[i].Input == "" {
			f.Spec.Schedules[i].Input = "{}"
		}
	}
}

// serverlessv1Runtime is the only Function runtime that exists today.
const serverlessv1Runtime = "python3"

func ptr[T any](v T) *T { return &v }
