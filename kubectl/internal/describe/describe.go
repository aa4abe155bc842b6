package describe

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// Object describes obj, then its events.
func Object(w io.Writer, obj *unstructured.Unstructured, events []corev1.Event) error {
	return ObjectAt(w, obj, events, time.Now())
}

// ObjectAt is Object with the clock used for ages, for tests.
func ObjectAt(w io.Writer, obj *unstructured.Unstructured, events []corev1.Event, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := &writer{w: tw, now: now}
	var err error
	switch obj.GroupVersionKind().GroupKind().String() {
	case "Pod":
		err = typed(obj, &corev1.Pod{}, p.pod)
	case "Deployment.apps":
		err = typed(obj, &appsv1.Deployment{}, p.deployment)
	case "Service":
		err = typed(obj, &corev1.Service{}, p.service)
	case "Node":
		err = typed(obj, &corev1.Node{}, p.node)
	case "PersistentVolumeClaim":
		err = typed(obj, &corev1.PersistentVolumeClaim{}, p.claim)
	case "PersistentVolume":
		err = typed(obj, &corev1.PersistentVolume{}, p.volume)
	case "Function.serverless.minik8s.io":
		err = typed(obj, &serverlessv1.Function{}, p.function)
	case "Workflow.serverless.minik8s.io":
		err = typed(obj, &serverlessv1.Workflow{}, p.workflow)
	case "WorkflowExecution.serverless.minik8s.io":
		err = typed(obj, &serverlessv1.WorkflowExecution{}, p.workflowExecution)
	default:
		err = p.generic(obj)
	}
	if err != nil {
		return err
	}
	p.events(events)
	return tw.Flush()
}

func typed[T any](obj *unstructured.Unstructured, into *T, fn func(*T)) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("decode %s %q: %w", obj.GetKind(), obj.GetName(), err)
	}
	fn(into)
	return nil
}

// writer writes "Key:<tab>value" lines at indentation levels of two spaces.
type writer struct {
	w   io.Writer
	now time.Time
}

func (p *writer) line(level int, format string, args ...any) {
	fmt.Fprintf(p.w, strings.Repeat("  ", level)+format+"\n", args...)
}

// pairs prints a map one entry per line under its key, or <none>.
func (p *writer) pairs(level int, key string, m map[string]string, sep string) {
	if len(m) == 0 {
		p.line(level, "%s:\t<none>", key)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		label := key + ":"
		if i > 0 {
			label = ""
		}
		p.line(level, "%s\t%s%s%s", label, k, sep, m[k])
	}
}

func (p *writer) meta(m metav1.ObjectMeta, namespaced bool) {
	p.line(0, "Name:\t%s", m.Name)
	if namespaced {
		p.line(0, "Namespace:\t%s", m.Namespace)
	}
	p.pairs(0, "Labels", m.Labels, "=")
	p.pairs(0, "Annotations", withoutLastApplied(m.Annotations), ": ")
}

func withoutLastApplied(a map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		if k != "kubectl.kubernetes.io/last-applied-configuration" {
			out[k] = v
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func (p *writer) pod(pod *corev1.Pod) {
	p.line(0, "Name:\t%s", pod.Name)
	p.line(0, "Namespace:\t%s", pod.Namespace)
	p.line(0, "Node:\t%s", orNone(nodeAndIP(pod.Spec.NodeName, pod.Status.HostIP)))
	if pod.Status.StartTime != nil {
		p.line(0, "Start Time:\t%s", pod.Status.StartTime.Time.Format(time.RFC1123Z))
	}
	p.pairs(0, "Labels", pod.Labels, "=")
	p.pairs(0, "Annotations", withoutLastApplied(pod.Annotations), ": ")
	status := string(pod.Status.Phase)
	if pod.DeletionTimestamp != nil {
		status = "Terminating"
	}
	p.line(0, "Status:\t%s", orNone(status))
	p.line(0, "IP:\t%s", pod.Status.PodIP)
	if c := metav1.GetControllerOf(pod); c != nil {
		p.line(0, "Controlled By:\t%s/%s", c.Kind, c.Name)
	}
	statuses := map[string]corev1.ContainerStatus{}
	for _, s := range pod.Status.ContainerStatuses {
		statuses[s.Name] = s
	}
	p.line(0, "Containers:")
	for _, c := range pod.Spec.Containers {
		p.container(c, statuses[c.Name])
	}
	if len(pod.Status.Conditions) > 0 {
		p.line(0, "Conditions:")
		p.line(1, "Type\tStatus")
		for _, c := range pod.Status.Conditions {
			p.line(1, "%s \t%s", c.Type, c.Status)
		}
	}
	if len(pod.Spec.Volumes) > 0 {
		p.line(0, "Volumes:")
		for _, v := range pod.Spec.Volumes {
			p.line(1, "%s:", v.Name)
			switch {
			case v.HostPath != nil:
				p.line(2, "Type:\tHostPath")
				p.line(2, "Path:\t%s", v.HostPath.Path)
			case v.EmptyDir != nil:
				p.line(2, "Type:\tEmptyDir")
			case v.ConfigMap != nil:
				p.line(2, "Type:\tConfigMap")
				p.line(2, "Name:\t%s", v.ConfigMap.Name)
			case v.Secret != nil:
				p.line(2, "Type:\tSecret")
				p.line(2, "SecretName:\t%s", v.Secret.SecretName)
			case v.PersistentVolumeClaim != nil:
				p.line(2, "Type:\tPersistentVolumeClaim")
				p.line(2, "ClaimName:\t%s", v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	p.line(0, "Node-Selectors:\t%s", orNone(labelsString(pod.Spec.NodeSelector)))
}

func nodeAndIP(node, ip string) string {
	if node == "" || ip == "" {
		return node
	}
	return node + "/" + ip
}

func labelsString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

func (p *writer) container(c corev1.Container, s corev1.ContainerStatus) {
	p.line(1, "%s:", c.Name)
	if s.ContainerID != "" {
		p.line(2, "Container ID:\t%s", s.ContainerID)
	}
	p.line(2, "Image:\t%s", c.Image)
	var ports []string
	for _, port := range c.Ports {
		ports = append(ports, fmt.Sprintf("%d/%s", port.ContainerPort, orDefault(string(port.Protocol), "TCP")))
	}
	p.line(2, "Port:\t%s", orNone(strings.Join(ports, ", ")))
	if len(c.Command) > 0 {
		p.line(2, "Command:\t%s", strings.Join(c.Command, " "))
	}
	if len(c.Args) > 0 {
		p.line(2, "Args:\t%s", strings.Join(c.Args, " "))
	}
	switch {
	case s.State.Running != nil:
		p.line(2, "State:\tRunning")
		p.line(3, "Started:\t%s", s.State.Running.StartedAt.Time.Format(time.RFC1123Z))
	case s.State.Waiting != nil:
		p.line(2, "State:\tWaiting")
		p.line(3, "Reason:\t%s", s.State.Waiting.Reason)
	case s.State.Terminated != nil:
		p.line(2, "State:\tTerminated")
		p.line(3, "Reason:\t%s", s.State.Terminated.Reason)
		p.line(3, "Exit Code:\t%d", s.State.Terminated.ExitCode)
	}
	p.line(2, "Ready:\t%t", s.Ready)
	p.line(2, "Restart Count:\t%d", s.RestartCount)
	if len(c.Resources.Limits) > 0 || len(c.Resources.Requests) > 0 {
		p.resources(2, "Limits", c.Resources.Limits)
		p.resources(2, "Requests", c.Resources.Requests)
	}
	if len(c.Env) == 0 {
		p.line(2, "Environment:\t<none>")
	} else {
		p.line(2, "Environment:")
		for _, e := range c.Env {
			v := e.Value
			if e.ValueFrom != nil {
				v = "<set from a reference>"
			}
			p.line(3, "%s:\t%s", e.Name, v)
		}
	}
}

func (p *writer) resources(level int, key string, rl corev1.ResourceList) {
	if len(rl) == 0 {
		return
	}
	p.line(level, "%s:", key)
	names := make([]string, 0, len(rl))
	for n := range rl {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		q := rl[corev1.ResourceName(n)]
		p.line(level+1, "%s:\t%s", n, q.String())
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (p *writer) deployment(d *appsv1.Deployment) {
	p.meta(d.ObjectMeta, true)
	p.line(0, "CreationTimestamp:\t%s", d.CreationTimestamp.Time.Format(time.RFC1123Z))
	if d.Spec.Selector != nil {
		p.line(0, "Selector:\t%s", orNone(labelsString(d.Spec.Selector.MatchLabels)))
	}
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	s := d.Status
	p.line(0, "Replicas:\t%d desired | %d updated | %d total | %d available | %d unavailable",
		desired, s.UpdatedReplicas, s.Replicas, s.AvailableReplicas, s.UnavailableReplicas)
	p.line(0, "StrategyType:\t%s", orDefault(string(d.Spec.Strategy.Type), "RollingUpdate"))
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil && ru.MaxSurge != nil {
		p.line(0, "RollingUpdateStrategy:\t%s max unavailable, %s max surge", ru.MaxUnavailable.String(), ru.MaxSurge.String())
	}
	p.line(0, "Pod Template:")
	p.pairs(1, "Labels", d.Spec.Template.Labels, "=")
	p.line(1, "Containers:")
	for _, c := range d.Spec.Template.Spec.Containers {
		p.line(2, "%s:", c.Name)
		p.line(3, "Image:\t%s", c.Image)
	}
	if len(s.Conditions) > 0 {
		p.line(0, "Conditions:")
		p.line(1, "Type\tStatus\tReason")
		p.line(1, "----\t------\t------")
		for _, c := range s.Conditions {
			p.line(1, "%s \t%s\t%s", c.Type, c.Status, c.Reason)
		}
	}
}

func (p *writer) service(s *corev1.Service) {
	p.meta(s.ObjectMeta, true)
	p.line(0, "Selector:\t%s", orNone(labelsString(s.Spec.Selector)))
	p.line(0, "Type:\t%s", orDefault(string(s.Spec.Type), "ClusterIP"))
	p.line(0, "IP:\t%s", orNone(s.Spec.ClusterIP))
	for _, port := range s.Spec.Ports {
		name := orDefault(port.Name, "<unset>")
		p.line(0, "Port:\t%s  %d/%s", name, port.Port, orDefault(string(port.Protocol), "TCP"))
		p.line(0, "TargetPort:\t%s/%s", port.TargetPort.String(), orDefault(string(port.Protocol), "TCP"))
		if port.NodePort != 0 {
			p.line(0, "NodePort:\t%s  %d/%s", name, port.NodePort, orDefault(string(port.Protocol), "TCP"))
		}
	}
	p.line(0, "Session Affinity:\t%s", orDefault(string(s.Spec.SessionAffinity), "None"))
}

func (p *writer) node(n *corev1.Node) {
	var roles []string
	for k := range n.Labels {
		if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok {
			roles = append(roles, r)
		}
	}
	sort.Strings(roles)
	p.line(0, "Name:\t%s", n.Name)
	p.line(0, "Roles:\t%s", orNone(strings.Join(roles, ",")))
	p.pairs(0, "Labels", n.Labels, "=")
	p.pairs(0, "Annotations", withoutLastApplied(n.Annotations), ": ")
	p.line(0, "CreationTimestamp:\t%s", n.CreationTimestamp.Time.Format(time.RFC1123Z))
	var taints []string
	for _, t := range n.Spec.Taints {
		taints = append(taints, t.ToString())
	}
	p.line(0, "Taints:\t%s", orNone(strings.Join(taints, ", ")))
	p.line(0, "Unschedulable:\t%t", n.Spec.Unschedulable)
	if len(n.Status.Conditions) > 0 {
		p.line(0, "Conditions:")
		p.line(1, "Type\tStatus\tLastHeartbeatTime\tReason\tMessage")
		p.line(1, "----\t------\t-----------------\t------\t-------")
		for _, c := range n.Status.Conditions {
			p.line(1, "%s \t%s \t%s \t%s \t%s", c.Type, c.Status, c.LastHeartbeatTime.Time.Format(time.RFC1123Z), c.Reason, c.Message)
		}
	}
	p.line(0, "Addresses:")
	for _, a := range n.Status.Addresses {
		p.line(1, "%s:\t%s", a.Type, a.Address)
	}
	p.resources(0, "Capacity", n.Status.Capacity)
	p.resources(0, "Allocatable", n.Status.Allocatable)
	si := n.Status.NodeInfo
	p.line(0, "System Info:")
	p.line(1, "Kernel Version:\t%s", si.KernelVersion)
	p.line(1, "OS Image:\t%s", si.OSImage)
	p.line(1, "Operating System:\t%s", si.OperatingSystem)
	p.line(1, "Architecture:\t%s", si.Architecture)
	p.line(1, "Container Runtime Version:\t%s", si.ContainerRuntimeVersion)
	p.line(1, "Kubelet Version:\t%s", si.KubeletVersion)
	p.line(0, "PodCIDR:\t%s", orNone(n.Spec.PodCIDR))
}

// generic prints metadata, then every other top-level field as indented YAML.
// generic describes a kind without a describer of its own (a custom resource, say) as
// kubectl's generic describer does: every field, nested by level, under a readable label.
func (p *writer) generic(obj *unstructured.Unstructured) error {
	p.line(0, "Name:\t%s", obj.GetName())
	p.line(0, "Namespace:\t%s", obj.GetNamespace())
	p.pairs(0, "Labels", obj.GetLabels(), "=")
	p.pairs(0, "Annotations", withoutLastApplied(obj.GetAnnotations()), ": ")
	p.content(0, obj.Object, "", ".metadata.managedFields", ".metadata.name", ".metadata.namespace", ".metadata.labels", ".metadata.annotations")
	return nil
}

// content writes the fields of m in name order; path is m's place in the object, for the
// fields to skip (".metadata.name").
func (p *writer) content(level int, m map[string]any, path string, skip ...string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		at := path + "." + k
		if slices.Contains(skip, at) {
			continue
		}
		switch v := m[k].(type) {
		case map[string]any:
			p.line(level, "%s:", fieldLabel(k))
			p.content(level+1, v, at, skip...)
		case []any:
			p.line(level, "%s:", fieldLabel(k))
			for _, item := range v {
				if im, ok := item.(map[string]any); ok {
					p.content(level+1, im, at, skip...)
				} else {
					p.line(level+1, "%v", item)
				}
			}
		default:
			// Tabs inside values would confuse the column alignment.
			p.line(level, "%s:\t%s", fieldLabel(k), strings.ReplaceAll(fmt.Sprint(v), "\t", " "))
		}
	}
}

// fieldLabel is a field name as kubectl's describe shows it: camel case split into capitalized
// words, known acronyms in capitals ("creationTimestamp" is "Creation Timestamp", "apiVersion"
// "API Version"). Names with characters other than letters and '-' stay as they are.
func fieldLabel(field string) string {
	if strings.IndexFunc(field, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }) >= 0 {
		return field
	}
	var words []string
	for _, w := range camelWords(field) {
		if up := strings.ToUpper(w); slices.Contains([]string{"API", "URL", "UID", "OSB", "GUID"}, up) {
			words = append(words, up)
			continue
		}
		r := []rune(w)
		words = append(words, strings.ToUpper(string(r[:1]))+strings.ToLower(string(r[1:])))
	}
	return strings.Join(words, " ")
}

// camelWords splits at changes between lower case, upper case and other characters, an upper
// case run giving its last letter to a lower case word after it ("HTTPServer": HTTP, Server;
// "apiVersion": api, Version).
func camelWords(s string) []string {
	class := func(r rune) int {
		switch {
		case unicode.IsLower(r):
			return 1
		case unicode.IsUpper(r):
			return 2
		}
		return 3
	}
	var runs [][]rune
	last := 0
	for _, r := range s {
		c := class(r)
		if c == last {
			runs[len(runs)-1] = append(runs[len(runs)-1], r)
		} else {
			runs = append(runs, []rune{r})
		}
		last = c
	}
	for i := 0; i+1 < len(runs); i++ {
		if len(runs[i]) > 0 && class(runs[i][0]) == 2 && class(runs[i+1][0]) == 1 {
			n := len(runs[i]) - 1
			runs[i+1] = append([]rune{runs[i][n]}, runs[i+1]...)
			runs[i] = runs[i][:n]
		}
	}
	var out []string
	for _, r := range runs {
		if len(r) > 0 {
			out = append(out, string(r))
		}
	}
	return out
}

func (p *writer) events(events []corev1.Event) {
	if len(events) == 0 {
		p.line(0, "Events:\t<none>")
		return
	}
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	p.line(0, "Events:")
	p.line(1, "Type\tReason\tAge\tFrom\tMessage")
	p.line(1, "----\t------\t----\t----\t-------")
	for _, e := range events {
		age := HumanDuration(p.now.Sub(eventTime(e)))
		if e.Count > 1 {
			age = fmt.Sprintf("%s (x%d over %s)", HumanDuration(p.now.Sub(e.LastTimestamp.Time)), e.Count, HumanDuration(p.now.Sub(e.FirstTimestamp.Time)))
		}
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		p.line(1, "%s\t%s\t%s\t%s\t%s", e.Type, e.Reason, age, from, strings.TrimSpace(e.Message))
	}
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

// HumanDuration is kubectl's short age: 45s, 12m, 5h, 3d.
func HumanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "<invalid>"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
