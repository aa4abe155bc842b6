package tables

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

var (
	containersColumn = metav1.TableColumnDefinition{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}
	imagesColumn     = metav1.TableColumnDefinition{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}
)

// containerCells joins the names and the images of containers, as -o wide shows them.
func containerCells(cs []corev1.Container) (names, images string) {
	n := make([]string, len(cs))
	im := make([]string, len(cs))
	for i, c := range cs {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

func replicas(r *int32) int64 {
	if r == nil {
		// The API defaults an unset replica count to 1.
		return 1
	}
	return int64(*r)
}

// Deployment is how kubectl get shows Deployments.
var Deployment = NewPrinter(deploymentColumns, deploymentRow)

var deploymentColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
	{Name: "Up-to-date", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]},
	{Name: "Available", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]},
	ageColumn,
	containersColumn,
	imagesColumn,
	{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]},
}

func deploymentRow(d *appsv1.Deployment, now time.Time) metav1.TableRow {
	selector := "<invalid>"
	if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		selector = s.String()
	}
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas)),
		int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), age(d.CreationTimestamp, now),
		names, images, selector,
	}}
}

// ReplicaSet is how kubectl get shows ReplicaSets.
var ReplicaSet = NewPrinter(replicaSetColumns, replicaSetRow)

var replicaSetColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Desired", Type: "integer", Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]},
	{Name: "Current", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]},
	{Name: "Ready", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]},
	ageColumn,
	containersColumn,
	imagesColumn,
	{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]},
}

func replicaSetRow(rs *appsv1.ReplicaSet, now time.Time) metav1.TableRow {
	names, images := containerCells(rs.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		rs.Name, replicas(rs.Spec.Replicas), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
		age(rs.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(rs.Spec.Selector),
	}}
}

// HorizontalPodAutoscaler is how kubectl get shows HorizontalPodAutoscalers.
var HorizontalPodAutoscaler = NewPrinter(hpaColumns, hpaRow)

var hpaColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Reference", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]},
	{Name: "Targets", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]},
	{Name: "MinPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]},
	{Name: "MaxPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]},
	{Name: "Replicas", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]},
	ageColumn,
}

func hpaRow(h *autoscalingv2.HorizontalPodAutoscaler, now time.Time) metav1.TableRow {
	minPods := "<unset>"
	if h.Spec.MinReplicas != nil {
		minPods = fmt.Sprintf("%d", *h.Spec.MinReplicas)
	}
	return metav1.TableRow{Cells: []any{
		h.Name, h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name,
		hpaTargets(h.Spec.Metrics, h.Status.CurrentMetrics), minPods,
		int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas), age(h.CreationTimestamp, now),
	}}
}

// hpaTargets shows "current/target" for the first two metrics, like kubectl.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	list := make([]string, 0, len(specs))
	for i, spec := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		list = append(list, hpaTarget(spec, st))
	}
	const shown = 2
	if len(list) > shown {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:shown], ", "), len(list)-shown)
	}
	return strings.Join(list, ", ")
}

func hpaTarget(spec autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	const unknown = "<unknown>"
	current := unknown
	switch spec.Type {
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External.Target.AverageValue != nil {
			if st != nil && st.External != nil && st.External.Current.AverageValue != nil {
				current = st.External.Current.AverageValue.String()
			}
			return fmt.Sprintf("%s/%s (avg)", current, spec.External.Target.AverageValue.String())
		}
		if st != nil && st.External != nil && st.External.Current.Value != nil {
			current = st.External.Current.Value.String()
		}
		return fmt.Sprintf("%s/%s", current, quantity(spec.External.Target.Value))
	case autoscalingv2.PodsMetricSourceType:
		if st != nil && st.Pods != nil && st.Pods.Current.AverageValue != nil {
			current = st.Pods.Current.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s", current, quantity(spec.Pods.Target.AverageValue))
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object.Target.AverageValue != nil {
			if st != nil && st.Object != nil && st.Object.Current.AverageValue != nil {
				current = st.Object.Current.AverageValue.String()
			}
			return fmt.Sprintf("%s/%s (avg)", current, spec.Object.Target.AverageValue.String())
		}
		if st != nil && st.Object != nil && st.Object.Current.Value != nil {
			current = st.Object.Current.Value.String()
		}
		return fmt.Sprintf("%s/%s", current, quantity(spec.Object.Target.Value))
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource.Target.AverageValue != nil {
			if st != nil && st.Resource != nil && st.Resource.Current.AverageValue != nil {
				current = st.Resource.Current.AverageValue.String()
			}
			return fmt.Sprintf("%s: %s/%s", spec.Resource.Name, current, spec.Resource.Target.AverageValue.String())
		}
		if st != nil && st.Resource != nil && st.Resource.Current.AverageUtilization != nil {
			current = fmt.Sprintf("%d%%", *st.Resource.Current.AverageUtilization)
		}
		return fmt.Sprintf("%s: %s/%s", spec.Resource.Name, current, utilization(spec.Resource.Target.AverageUtilization))
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource.Target.AverageValue != nil {
			if st != nil && st.ContainerResource != nil && st.ContainerResource.Current.AverageValue != nil {
				current = st.ContainerResource.Current.AverageValue.String()
			}
			return fmt.Sprintf("%s: %s/%s", spec.ContainerResource.Name, current, spec.ContainerResource.Target.AverageValue.String())
		}
		if st != nil && st.ContainerResource != nil && st.ContainerResource.Current.AverageUtilization != nil {
			current = fmt.Sprintf("%d%%", *st.ContainerResource.Current.AverageUtilization)
		}
		return fmt.Sprintf("%s: %s/%s", spec.ContainerResource.Name, current, utilization(spec.ContainerResource.Target.AverageUtilization))
	}
	return "<unknown type>"
}

func utilization(u *int32) string {
	if u == nil {
		return "<auto>"
	}
	return fmt.Sprintf("%d%%", *u)
}

// quantity prints an optional target; autoscaling/v2 made them pointers, and a malformed HPA
// must not crash the listing.
func quantity(q *resource.Quantity) string {
	if q == nil {
		return "<unset>"
	}
	return q.String()
}

// Job is how kubectl get shows Jobs.
var Job = NewPrinter(jobColumns, jobRow)

var jobColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Status", Type: "string", Description: "Status of the job."},
	{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
	{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
	ageColumn,
	containersColumn,
	imagesColumn,
	{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
}

func jobRow(j *batchv1.Job, now time.Time) metav1.TableRow {
	var completions string
	switch {
	case j.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	case j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1:
		completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	default:
		completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
	}
	var took string
	switch {
	case j.Status.StartTime == nil:
	case j.Status.CompletionTime == nil:
		took = duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	default:
		took = duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
	}
	status := "Running"
	switch {
	case jobCondition(j, batchv1.JobComplete):
		status = "Complete"
	case jobCondition(j, batchv1.JobFailed):
		status = "Failed"
	case j.DeletionTimestamp != nil:
		status = "Terminating"
	case jobCondition(j, batchv1.JobSuspended):
		status = "Suspended"
	case jobCondition(j, batchv1.JobFailureTarget):
		status = "FailureTarget"
	}
	names, images := containerCells(j.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		j.Name, status, completions, took, age(j.CreationTimestamp, now),
		names, images, metav1.FormatLabelSelector(j.Spec.Selector),
	}}
}

// jobCondition reports whether the first condition of type t is true.
func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Ingress is how kubectl get shows Ingresses.
var Ingress = NewPrinter(ingressColumns, ingressRow)

var ingressColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Class", Type: "string", Description: "The name of the IngressClass resource that should be used for additional configuration"},
	{Name: "Hosts", Type: "string", Description: "Hosts that incoming requests are matched against before the ingress rule"},
	{Name: "Address", Type: "string", Description: "Address is a list containing ingress points for the load-balancer"},
	{Name: "Ports", Type: "string", Description: "Ports of TLS configurations that open"},
	ageColumn,
}

func ingressRow(in *networkingv1.Ingress, now time.Time) metav1.TableRow {
	class := "<none>"
	if in.Spec.IngressClassName != nil {
		class = *in.Spec.IngressClassName
	}
	const shown = 3
	var hosts []string
	for _, r := range in.Spec.Rules {
		if r.Host != "" && len(hosts) < shown {
			hosts = append(hosts, r.Host)
		}
	}
	hostCell := "*"
	if len(hosts) > 0 {
		hostCell = strings.Join(hosts, ",")
		if len(in.Spec.Rules) > shown {
			hostCell = fmt.Sprintf("%s + %d more...", hostCell, len(in.Spec.Rules)-shown)
		}
	}
	set := map[string]bool{}
	for _, lb := range in.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			set[lb.IP] = true
		} else if lb.Hostname != "" {
			set[lb.Hostname] = true
		}
	}
	addrs := make([]string, 0, len(set))
	for a := range set {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	ports := "80"
	if len(in.Spec.TLS) > 0 {
		ports = "80, 443"
	}
	return metav1.TableRow{Cells: []any{in.Name, class, hostCell, strings.Join(addrs, ","), ports, age(in.CreationTimestamp, now)}}
}

// Lease is how kubectl get shows Leases.
var Lease = NewPrinter(leaseColumns, leaseRow)

var leaseColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
	ageColumn,
}

func leaseRow(l *coordinationv1.Lease, now time.Time) metav1.TableRow {
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return metav1.TableRow{Cells: []any{l.Name, holder, age(l.CreationTimestamp, now)}}
}

// Function is how kubectl get shows Functions.
var Function = NewPrinter(functionColumns, functionRow)

var functionColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Ready", Type: "string", Description: "Ready pods of the function over the pods the autoscaler asks for."},
	{Name: "Version", Type: "string", Description: "Version of the function's source the serverless component deploys (v1, v2, ...)."},
	{Name: "Phase", Type: "string", Description: "Building, Ready or Failed, as the serverless component reports it."},
	{Name: "Last Call", Type: "string", Description: "Time since the gateway last took a call of the function."},
	ageColumn,
	{Name: "Runtime", Type: "string", Priority: 1, Description: "Language runtime the function runs on."},
	{Name: "Image", Type: "string", Priority: 1, Description: "Image built for the current version of the function."},
}

func functionRow(f *serverlessv1.Function, now time.Time) metav1.TableRow {
	st := &f.Status
	rt := f.Spec.Runtime
	if rt == "" {
		rt = "python3"
	}
	version, phase, lastCall := "<none>", st.Phase, "<none>"
	if st.Version > 0 {
		version = fmt.Sprintf("v%d", st.Version)
	}
	if phase == "" {
		phase = "Pending"
	}
	if st.LastCallTime != nil {
		lastCall = age(*st.LastCallTime, now)
	}
	return metav1.TableRow{Cells: []any{
		f.Name, fmt.Sprintf("%d/%d", st.ReadyReplicas, st.DesiredReplicas), version, phase, lastCall,
		age(f.CreationTimestamp, now), rt, orNone(st.Image),
	}}
}

// Workflow is how kubectl get shows Workflows.
var Workflow = NewPrinter(workflowColumns, workflowRow)

var workflowColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Start At", Type: "string", Description: "State the workflow starts at."},
	{Name: "States", Type: "integer", Description: "Number of top-level states in the workflow."},
	ageColumn,
}

func workflowRow(w *serverlessv1.Workflow, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{w.Name, w.Spec.StartAt, int64(len(w.Spec.States)), age(w.CreationTimestamp, now)}}
}

// WorkflowExecution is how kubectl get shows WorkflowExecutions.
var WorkflowExecution = NewPrinter(workflowExecutionColumns, workflowExecutionRow)

var workflowExecutionColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Workflow", Type: "string", Description: "Workflow the execution runs."},
	{Name: "Phase", Type: "string", Description: "Running, Succeeded or Failed."},
	{Name: "Duration", Type: "string", Description: "Time from the start to the end of the execution, or until now while it runs."},
	ageColumn,
	{Name: "Steps", Type: "integer", Priority: 1, Description: "States the execution entered."},
	{Name: "Error", Type: "string", Priority: 1, Description: "Error a failed execution ended with."},
}

func workflowExecutionRow(e *serverlessv1.WorkflowExecution, now time.Time) metav1.TableRow {
	st := &e.Status
	phase := st.Phase
	if phase == "" {
		phase = "Pending"
	}
	var took string
	switch {
	case st.StartTime == nil:
	case st.CompletionTime == nil:
		took = shortDuration(now.Sub(st.StartTime.Time))
	case st.DurationMilliseconds > 0:
		took = shortDuration(time.Duration(st.DurationMilliseconds) * time.Millisecond)
	default:
		took = shortDuration(st.CompletionTime.Sub(st.StartTime.Time))
	}
	return metav1.TableRow{Cells: []any{e.Name, e.Spec.Workflow, phase, took, age(e.CreationTimestamp, now),
		int64(len(st.Steps)) + int64(st.StepsOmitted), orNone(st.Error)}}
}

// shortDuration shows durations under a second in milliseconds: most executions take less.
func shortDuration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return duration.HumanDuration(d)
}

// ControllerRevision is how kubectl get shows ControllerRevisions: the controller as
// <kind>.<group>/<name>, as upstream.
var ControllerRevision = NewPrinter(controllerRevisionColumns, controllerRevisionRow)

var controllerRevisionColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Controller", Type: "string", Description: "Controller of the object"},
	{Name: "Revision", Type: "number", Description: appsv1.ControllerRevision{}.SwaggerDoc()["revision"]},
	ageColumn,
}

func controllerRevisionRow(r *appsv1.ControllerRevision, now time.Time) metav1.TableRow {
	controller := "<none>"
	if ref := metav1.GetControllerOfNoCopy(r); ref != nil {
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		controller = strings.ToLower(gv.WithKind(ref.Kind).GroupKind().String()) + "/" + ref.Name
	}
	return metav1.TableRow{Cells: []any{r.Name, controller, r.Revision, age(r.CreationTimestamp, now)}}
}
