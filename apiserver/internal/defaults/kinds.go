package defaults

import (
	"math"
	"net"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Service defaults a Service.
func Service(s *corev1.Service) {
	sp := &s.Spec
	if sp.Type == "" {
		sp.Type = corev1.ServiceTypeClusterIP
	}
	if sp.SessionAffinity == "" {
		sp.SessionAffinity = corev1.ServiceAffinityNone
	}
	if sp.SessionAffinity == corev1.ServiceAffinityClientIP {
		if sp.SessionAffinityConfig == nil {
			sp.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		}
		if sp.SessionAffinityConfig.ClientIP == nil {
			sp.SessionAffinityConfig.ClientIP = &corev1.ClientIPConfig{}
		}
		if sp.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
			sp.SessionAffinityConfig.ClientIP.TimeoutSeconds = ptr(corev1.DefaultClientIPServiceAffinitySeconds)
		}
	}
	for i := range sp.Ports {
		p := &sp.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if sp.Type == corev1.ServiceTypeExternalName {
		return
	}
	if len(sp.ClusterIPs) == 0 && sp.ClusterIP != "" {
		sp.ClusterIPs = []string{sp.ClusterIP}
	}
	if sp.IPFamilyPolicy == nil {
		policy := corev1.IPFamilyPolicySingleStack
		if sp.ClusterIP == corev1.ClusterIPNone && len(sp.Selector) == 0 {
			// Headless without selector: Kubernetes lets such a service carry both families.
			policy = corev1.IPFamilyPolicyRequireDualStack
		}
		sp.IPFamilyPolicy = &policy
	}
	if len(sp.IPFamilies) == 0 {
		family := corev1.IPv4Protocol
		if ip := net.ParseIP(sp.ClusterIP); ip != nil && ip.To4() == nil {
			family = corev1.IPv6Protocol
		}
		sp.IPFamilies = []corev1.IPFamily{family}
	}
	if sp.InternalTrafficPolicy == nil {
		sp.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if sp.Type == corev1.ServiceTypeNodePort || sp.Type == corev1.ServiceTypeLoadBalancer {
		if sp.ExternalTrafficPolicy == "" {
			sp.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}
	}
	if sp.Type == corev1.ServiceTypeLoadBalancer && sp.AllocateLoadBalancerNodePorts == nil {
		sp.AllocateLoadBalancerNodePorts = ptr(true)
	}
}

// KeepServiceAllocations copies the cluster IPs and node ports that the server allocated into
// an update that leaves them out.
func KeepServiceAllocations(n, o *corev1.Service) {
	if n.Spec.Type == corev1.ServiceTypeExternalName || o.Spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if n.Spec.ClusterIP == "" && len(n.Spec.ClusterIPs) == 0 {
		n.Spec.ClusterIP = o.Spec.ClusterIP
		n.Spec.ClusterIPs = append([]string(nil), o.Spec.ClusterIPs...)
	}
	if n.Spec.Type == corev1.ServiceTypeClusterIP {
		return
	}
	for i := range n.Spec.Ports {
		np := &n.Spec.Ports[i]
		if np.NodePort != 0 {
			continue
		}
		for _, op := range o.Spec.Ports {
			if op.Port == np.Port && protocolOrTCP(op.Protocol) == protocolOrTCP(np.Protocol) {
				np.NodePort = op.NodePort
				break
			}
		}
	}
}

func protocolOrTCP(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// Endpoints defaults an Endpoints.
func Endpoints(e *corev1.Endpoints) {
	for i := range e.Subsets {
		for j := range e.Subsets[i].Ports {
			if e.Subsets[i].Ports[j].Protocol == "" {
				e.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

// Deployment defaults a Deployment.
func Deployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr(int32(1))
	}
	st := &d.Spec.Strategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if st.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			st.RollingUpdate.MaxUnavailable = ptr(intstr.FromString("25%"))
		}
		if st.RollingUpdate.MaxSurge == nil {
			st.RollingUpdate.MaxSurge = ptr(intstr.FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptr(int32(10))
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptr(int32(600))
	}
	podSpec(&d.Spec.Template.Spec, true)
}

// ReplicaSet defaults a ReplicaSet.
func ReplicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr(int32(1))
	}
	podSpec(&rs.Spec.Template.Spec, true)
}

// Labels Kubernetes puts on a Job's pods so its generated selector finds them.
const (
	labelJobName             = "batch.kubernetes.io/job-name"
	labelLegacyJobName       = "job-name"
	labelControllerUID       = "batch.kubernetes.io/controller-uid"
	labelLegacyControllerUID = "controller-uid"
)

// Job defaults a Job.
func Job(j *batchv1.Job) {
	if j.Spec.Selector == nil && (j.Spec.ManualSelector == nil || !*j.Spec.ManualSelector) {
		generateJobSelector(j)
	}
	if j.Spec.Completions == nil && j.Spec.Parallelism == nil {
		j.Spec.Completions = ptr(int32(1))
	}
	if j.Spec.Parallelism == nil {
		j.Spec.Parallelism = ptr(int32(1))
	}
	if j.Spec.BackoffLimit == nil {
		if j.Spec.BackoffLimitPerIndex != nil {
			// With a per-index limit the global one must not cut in first.
			j.Spec.BackoffLimit = ptr(int32(math.MaxInt32))
		} else {
			j.Spec.BackoffLimit = ptr(int32(6))
		}
	}
	if j.Spec.CompletionMode == nil {
		j.Spec.CompletionMode = ptr(batchv1.NonIndexedCompletion)
	}
	if j.Spec.Suspend == nil {
		j.Spec.Suspend = ptr(false)
	}
	if j.Spec.PodReplacementPolicy == nil {
		if j.Spec.PodFailurePolicy != nil {
			j.Spec.PodReplacementPolicy = ptr(batchv1.Failed)
		} else {
			j.Spec.PodReplacementPolicy = ptr(batchv1.TerminatingOrFailed)
		}
	}
	podSpec(&j.Spec.Template.Spec, false)
}

// generateJobSelector labels the template and selects on those labels, as Kubernetes does. The
// uid makes the selector unique to this Job; the apiserver sets metadata.uid before defaulting.
// Without a uid (a Job defaulted outside a create) the name alone is used.
func generateJobSelector(j *batchv1.Job) {
	if j.Name == "" && j.UID == "" {
		return
	}
	labels := j.Spec.Template.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	sel := map[string]string{}
	if j.Name != "" {
		labels[labelJobName] = j.Name
		labels[labelLegacyJobName] = j.Name
		sel[labelJobName] = j.Name
	}
	if j.UID != "" {
		uid := string(j.UID)
		labels[labelControllerUID] = uid
		labels[labelLegacyControllerUID] = uid
		sel = map[string]string{labelControllerUID: uid}
	}
	j.Spec.Template.Labels = labels
	j.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
}

// KeepJobSelector carries a generated selector and its template labels into an update that
// leaves them out.
func KeepJobSelector(n, o *batchv1.Job) {
	if n.Spec.Selector != nil || o.Spec.Selector == nil {
		return
	}
	n.Spec.Selector = o.Spec.Selector.DeepCopy()
	for _, k := range []string{labelJobName, labelLegacyJobName, labelControllerUID, labelLegacyControllerUID} {
		v, ok := o.Spec.Template.Labels[k]
		if !ok {
			continue
		}
		if _, set := n.Spec.Template.Labels[k]; set {
			continue
		}
		if n.Spec.Template.Labels == nil {
			n.Spec.Template.Labels = map[string]string{}
		}
		n.Spec.Template.Labels[k] = v
	}
}

// HorizontalPodAutoscaler defaults a HorizontalPodAutoscaler.
func HorizontalPodAutoscaler(h *autoscalingv2.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		h.Spec.MinReplicas = ptr(int32(1))
	}
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{
					Type:               autoscalingv2.UtilizationMetricType,
					AverageUtilization: ptr(int32(80)),
				},
			},
		}}
	}
	// As in Kubernetes, behavior is filled in only when the user gave one; a nil behavior
	// means the controller's built-in defaults.
	if b := h.Spec.Behavior; b != nil {
		b.ScaleUp = scalingRules(b.ScaleUp, 0, []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		})
		b.ScaleDown = scalingRules(b.ScaleDown, 300, []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		})
	}
}

func scalingRules(r *autoscalingv2.HPAScalingRules, window int32, policies []autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	if r == nil {
		r = &autoscalingv2.HPAScalingRules{}
	}
	if r.StabilizationWindowSeconds == nil {
		r.StabilizationWindowSeconds = ptr(window)
	}
	if r.SelectPolicy == nil {
		r.SelectPolicy = ptr(autoscalingv2.MaxChangePolicySelect)
	}
	if len(r.Policies) == 0 {
		r.Policies = policies
	}
	return r
}
