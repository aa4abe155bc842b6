package defaults

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// defaultCase is an object before and after its kind's defaults.
type defaultCase[T runtime.Object] struct {
	name    string
	in, out T
}

// run applies a kind's defaults to each input and compares with the expected object; it then
// applies them again to prove they are idempotent.
func run[T runtime.Object](t *testing.T, apply func(T), cases []defaultCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apply(tc.in)
			if diff := cmp.Diff(tc.out, tc.in); diff != "" {
				t.Errorf("defaults (-want +got):\n%s", diff)
			}
			again := tc.in.DeepCopyObject().(T)
			apply(again)
			if diff := cmp.Diff(tc.in, again); diff != "" {
				t.Errorf("defaulting again changed the object (-first +second):\n%s", diff)
			}
		})
	}
}

func ctr(image string) corev1.Container {
	return corev1.Container{Name: "c", Image: image}
}

// defaultedContainer is container(image) as Kubernetes returns it.
func defaultedContainer(image string, pull corev1.PullPolicy) corev1.Container {
	return corev1.Container{Name: "c", Image: image, ImagePullPolicy: pull,
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile}
}

func defaultedSpec(restart corev1.RestartPolicy, cs ...corev1.Container) corev1.PodSpec {
	return corev1.PodSpec{
		Containers: cs, RestartPolicy: restart, DNSPolicy: corev1.DNSClusterFirst,
		SecurityContext: &corev1.PodSecurityContext{}, TerminationGracePeriodSeconds: ptr(int64(30)),
		SchedulerName: "default-scheduler",
	}
}

func TestPod(t *testing.T) {
	podWith := func(cs ...corev1.Container) *corev1.Pod { return &corev1.Pod{Spec: corev1.PodSpec{Containers: cs}} }
	defaulted := func(cs ...corev1.Container) *corev1.Pod {
		p := &corev1.Pod{Spec: defaultedSpec(corev1.RestartPolicyAlways, cs...)}
		p.Spec.EnableServiceLinks = ptr(true)
		p.Spec.Priority = ptr(int32(0))
		return p
	}
	withPort := ctr("nginx:1.27")
	withPort.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
	wantPort := defaultedContainer("nginx:1.27", corev1.PullIfNotPresent)
	wantPort.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}

	limits := ctr("nginx:1.27")
	limits.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	wantLimits := defaultedContainer("nginx:1.27", corev1.PullIfNotPresent)
	wantLimits.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	wantLimits.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}

	probe := ctr("app")
	probe.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}}
	wantProbe := defaultedContainer("app", corev1.PullAlways)
	wantProbe.LivenessProbe = &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
	}

	volumes := podWith(ctr("app:v1"))
	volumes.Spec.Volumes = []corev1.Volume{{Name: "scratch"}, {Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
	wantVolumes := defaulted(defaultedContainer("app:v1", corev1.PullIfNotPresent))
	wantVolumes.Spec.Volumes = []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{DefaultMode: ptr(int32(0o644))}}},
	}

	kept := podWith(ctr("nginx"))
	kept.Spec.RestartPolicy = corev1.RestartPolicyNever
	kept.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	wantKept := defaulted(defaultedContainer("nginx", corev1.PullNever))
	wantKept.Spec.RestartPolicy = corev1.RestartPolicyNever

	run(t, Pod, []defaultCase[*corev1.Pod]{
		{"no tag pulls always", podWith(ctr("nginx")), defaulted(defaultedContainer("nginx", corev1.PullAlways))},
		{"latest pulls always", podWith(ctr("nginx:latest")), defaulted(defaultedContainer("nginx:latest", corev1.PullAlways))},
		{"pinned tag", podWith(ctr("nginx:1.27")), defaulted(defaultedContainer("nginx:1.27", corev1.PullIfNotPresent))},
		{"registry port is not a tag", podWith(ctr("localhost:5000/app")), defaulted(defaultedContainer("localhost:5000/app", corev1.PullAlways))},
		{"digest", podWith(ctr("app@sha256:abc")), defaulted(defaultedContainer("app@sha256:abc", corev1.PullIfNotPresent))},
		{"port protocol", podWith(withPort), defaulted(wantPort)},
		{"requests from limits", podWith(limits), defaulted(wantLimits)},
		{"probe", podWith(probe), defaulted(wantProbe)},
		{"volumes", volumes, wantVolumes},
		{"user values kept", kept, wantKept},
	})
}

func TestService(t *testing.T) {
	single := corev1.IPFamilyPolicySingleStack
	cluster := corev1.ServiceInternalTrafficPolicyCluster
	run(t, Service, []defaultCase[*corev1.Service]{
		{"cluster IP",
			&corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
			&corev1.Service{Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone,
				Ports:          []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
				IPFamilyPolicy: &single, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, InternalTrafficPolicy: &cluster,
			}}},
		{"node port keeps target",
			&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.5",
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolUDP}}}},
			&corev1.Service{Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeNodePort, SessionAffinity: corev1.ServiceAffinityNone,
				ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5"},
				Ports:          []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("http")}},
				IPFamilyPolicy: &single, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, InternalTrafficPolicy: &cluster,
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			}}},
		{"external name has no IP fields",
			&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}},
			&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com", SessionAffinity: corev1.ServiceAffinityNone}}},
	})
}

// An update that leaves out what the server set keeps it: a Service's cluster IPs and node
// ports, a Job's generated selector.
func TestKeepOnUpdate(t *testing.T) {
	old := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.7",
		Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080}}}}
	Service(old)
	next := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}
	KeepServiceAllocations(next, old)
	Service(next)
	got := []any{next.Spec.ClusterIP, next.Spec.ClusterIPs, next.Spec.Ports[0].NodePort}
	want := []any{"10.96.0.7", []string{"10.96.0.7"}, int32(30080)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("allocations (-want +got):\n%s", diff)
	}

	oldJob := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "u1"}}
	Job(oldJob)
	nextJob := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "u1"}}
	nextJob.Spec.Parallelism = ptr(int32(2))
	KeepJobSelector(nextJob, oldJob)
	Job(nextJob)
	if diff := cmp.Diff(oldJob.Spec.Selector, nextJob.Spec.Selector); diff != "" {
		t.Errorf("job selector (-old +new):\n%s", diff)
	}
	if diff := cmp.Diff(oldJob.Spec.Template.Labels, nextJob.Spec.Template.Labels); diff != "" {
		t.Errorf("job template labels (-old +new):\n%s", diff)
	}
}

func TestWorkloads(t *testing.T) {
	pct := intstr.FromString("25%")
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr("app:v1")}}}
	wantTmpl := corev1.PodTemplateSpec{Spec: defaultedSpec(corev1.RestartPolicyAlways, defaultedContainer("app:v1", corev1.PullIfNotPresent))}
	jobTmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			"batch.kubernetes.io/job-name": "pi", "job-name": "pi",
			"batch.kubernetes.io/controller-uid": "u1", "controller-uid": "u1",
		}},
		Spec: defaultedSpec("", defaultedContainer("app:v1", corev1.PullIfNotPresent)),
	}
	run(t, Deployment, []defaultCase[*appsv1.Deployment]{
		{"deployment",
			&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: *tmpl.DeepCopy()}},
			&appsv1.Deployment{Spec: appsv1.DeploymentSpec{
				Replicas: ptr(int32(1)),
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &pct, MaxSurge: &pct}},
				RevisionHistoryLimit: ptr(int32(10)), ProgressDeadlineSeconds: ptr(int32(600)),
				Template: *wantTmpl.DeepCopy(),
			}}},
		{"recreate gets no rolling update",
			&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(0)), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, Template: *tmpl.DeepCopy()}},
			&appsv1.Deployment{Spec: appsv1.DeploymentSpec{
				Replicas: ptr(int32(0)), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				RevisionHistoryLimit: ptr(int32(10)), ProgressDeadlineSeconds: ptr(int32(600)), Template: *wantTmpl.DeepCopy(),
			}}},
	})
	run(t, ReplicaSet, []defaultCase[*appsv1.ReplicaSet]{
		{"replicaset",
			&appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Template: *tmpl.DeepCopy()}},
			&appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(1)), Template: *wantTmpl.DeepCopy()}}},
	})
	run(t, Job, []defaultCase[*batchv1.Job]{
		{"job leaves restartPolicy to the user",
			&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "u1"}, Spec: batchv1.JobSpec{Template: *tmpl.DeepCopy()}},
			&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "u1"}, Spec: batchv1.JobSpec{
				Parallelism: ptr(int32(1)), Completions: ptr(int32(1)), BackoffLimit: ptr(int32(6)),
				CompletionMode: ptr(batchv1.NonIndexedCompletion), Suspend: ptr(false),
				PodReplacementPolicy: ptr(batchv1.TerminatingOrFailed),
				Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u1"}},
				Template:             *jobTmpl.DeepCopy(),
			}}},
		{"job with parallelism keeps completions unset",
			&batchv1.Job{Spec: batchv1.JobSpec{Parallelism: ptr(int32(3)), BackoffLimitPerIndex: ptr(int32(1)), ManualSelector: ptr(true)}},
			&batchv1.Job{Spec: batchv1.JobSpec{
				Parallelism: ptr(int32(3)), BackoffLimitPerIndex: ptr(int32(1)), ManualSelector: ptr(true),
				BackoffLimit: ptr(int32(math.MaxInt32)), CompletionMode: ptr(batchv1.NonIndexedCompletion), Suspend: ptr(false),
				PodReplacementPolicy: ptr(batchv1.TerminatingOrFailed),
				Template:             corev1.PodTemplateSpec{Spec: defaultedSpec("")},
			}}},
	})
}

func TestHPA(t *testing.T) {
	cpu80 := []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(80))}}}}
	maxPolicy := autoscalingv2.MaxChangePolicySelect
	run(t, HorizontalPodAutoscaler, []defaultCase[*autoscalingv2.HorizontalPodAutoscaler]{
		{"min replicas and cpu metric",
			&autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5}},
			&autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5, MinReplicas: ptr(int32(1)), Metrics: cpu80}}},
		{"behavior filled in when given",
			&autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5, MinReplicas: ptr(int32(2)),
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(60))}}}},
			&autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5, MinReplicas: ptr(int32(2)), Metrics: cpu80,
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
					ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(0)), SelectPolicy: &maxPolicy, Policies: []autoscalingv2.HPAScalingPolicy{
						{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}, {Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}},
					ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(60)), SelectPolicy: &maxPolicy, Policies: []autoscalingv2.HPAScalingPolicy{
						{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}},
				}}}},
	})
}

func TestClusterKinds(t *testing.T) {
	fs := corev1.PersistentVolumeFilesystem
	run(t, Namespace, []defaultCase[*corev1.Namespace]{
		{"namespace",
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"kubernetes.io/metadata.name": "team-a"}},
				Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}},
	})
	run(t, Node, []defaultCase[*corev1.Node]{
		{"node allocatable from capacity",
			&corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}}},
			&corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
				Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}}}},
	})
	run(t, Secret, []defaultCase[*corev1.Secret]{
		{"secret", &corev1.Secret{}, &corev1.Secret{Type: corev1.SecretTypeOpaque}},
	})
	run(t, PersistentVolume, []defaultCase[*corev1.PersistentVolume]{
		{"pv",
			&corev1.PersistentVolume{},
			&corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, VolumeMode: &fs},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumePending}}},
	})
	run(t, PersistentVolumeClaim, []defaultCase[*corev1.PersistentVolumeClaim]{
		{"pvc",
			&corev1.PersistentVolumeClaim{},
			&corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: &fs}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}},
	})
}

func TestFunction(t *testing.T) {
	run(t, Function, []defaultCase[*serverlessv1.Function]{
		{"all defaults",
			&serverlessv1.Function{Spec: serverlessv1.FunctionSpec{Handler: "main.handle"}},
			&serverlessv1.Function{Spec: serverlessv1.FunctionSpec{Handler: "main.handle", Runtime: "python3", Scale: serverlessv1.FunctionScale{
				MinReplicas: ptr(int32(0)), MaxReplicas: ptr(int32(10)), TargetConcurrency: ptr(int32(10)), MaxQueue: ptr(int32(100)), StableWindowSeconds: ptr(int32(60)), IdleSeconds: ptr(int32(60))}, TimeoutSeconds: ptr(int32(30))}}},
		{"user scale kept",
			&serverlessv1.Function{Spec: serverlessv1.FunctionSpec{Scale: serverlessv1.FunctionScale{MinReplicas: ptr(int32(1)), MaxReplicas: ptr(int32(3))}}},
			&serverlessv1.Function{Spec: serverlessv1.FunctionSpec{Runtime: "python3", Scale: serverlessv1.FunctionScale{
				MinReplicas: ptr(int32(1)), MaxReplicas: ptr(int32(3)), TargetConcurrency: ptr(int32(10)), MaxQueue: ptr(int32(100)), StableWindowSeconds: ptr(int32(60)), IdleSeconds: ptr(int32(60))}, TimeoutSeconds: ptr(int32(30))}}},
	})
}
