package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// defaultContainerAnnotation names the container kubectl picks when -c names none.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// podRef is what exec, attach and port-forward are pointed at: a pod, or an object whose
// selector picks one.
type podRef struct {
	res  *scheme.Resource
	name string
}

// parsePodRef reads "POD" or "TYPE/NAME"; a bare name is a pod, as in kubectl.
func parsePodRef(arg string) (podRef, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok {
		if arg == "" {
			return podRef{}, errors.New("pod, type/name or --filename must be specified")
		}
		return podRef{res: podResource(), name: arg}, nil
	}
	if typ == "" || name == "" || strings.Contains(name, "/") {
		return podRef{}, fmt.Errorf("arguments in resource/name form must have a single resource and name")
	}
	res, err := lookup(typ)
	if err != nil {
		return podRef{}, err
	}
	return podRef{res: res, name: name}, nil
}

func podResource() *scheme.Resource {
	res, err := scheme.Lookup("pods")
	if err != nil {
		panic("scheme has no pods: " + err.Error())
	}
	return res
}

// attachablePod finds the pod ref stands for: the pod itself, or the most active pod its
// selector matches, waiting up to timeout for one to exist.
func attachablePod(ctx context.Context, cl *client.Client, ns string, ref podRef, timeout time.Duration) (*corev1.Pod, error) {
	pod, _, err := resolvePod(ctx, cl, ns, ref, timeout)
	return pod, err
}

// resolvePod is attachablePod that also returns the object that selected the pod (nil
// when ref is a pod): port-forward translates a Service's ports.
func resolvePod(ctx context.Context, cl *client.Client, ns string, ref podRef, timeout time.Duration) (*corev1.Pod, runtime.Object, error) {
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](cl)
	if ref.res.Plural == "pods" {
		pod, err := pods.Get(ctx, ns, ref.name, metav1.GetOptions{})
		return pod, nil, err
	}
	u, err := client.Dynamic(cl, ref.res).Get(ctx, ns, ref.name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	obj := ref.res.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, nil, fmt.Errorf("decode %s %s: %w", ref.res.Singular, ref.name, err)
	}
	sel, err := podSelector(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot attach to %T: %w", obj, err)
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		l, err := pods.List(ctx, ns, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil && ctx.Err() == nil {
			return nil, nil, err
		}
		if err == nil && len(l.Items) > 0 {
			return mostActive(l.Items), obj, nil
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return nil, nil, parent.Err()
			}
			return nil, nil, errors.New("timed out waiting for the condition")
		case <-tick.C:
		}
	}
}

// podSelector is the label selector of the pods an object manages or serves.
func podSelector(obj runtime.Object) (labels.Selector, error) {
	var ls *metav1.LabelSelector
	switch o := obj.(type) {
	case *corev1.Service:
		if len(o.Spec.Selector) == 0 {
			return nil, fmt.Errorf("invalid service '%s': Service is defined without a selector", o.Name)
		}
		return labels.SelectorFromSet(o.Spec.Selector), nil
	case *appsv1.Deployment:
		ls = o.Spec.Selector
	case *appsv1.ReplicaSet:
		ls = o.Spec.Selector
	case *batchv1.Job:
		ls = o.Spec.Selector
	default:
		return nil, fmt.Errorf("cannot attach to %T: selector not supported", obj)
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("invalid label selector: %w", err)
	}
	return sel, nil
}

// mostActive picks the pod kubectl would: bound before unbound, running before unknown
// before pending, ready before not, ready longer, fewer restarts, older. pods is not empty.
func mostActive(pods []corev1.Pod) *corev1.Pod {
	sorted := make([]corev1.Pod, len(pods))
	copy(sorted, pods)
	sort.SliceStable(sorted, func(i, j int) bool { return moreActive(&sorted[i], &sorted[j]) })
	return &sorted[0]
}

func moreActive(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
		return a.Spec.NodeName != ""
	}
	rank := map[corev1.PodPhase]int{corev1.PodRunning: 2, corev1.PodUnknown: 1, corev1.PodPending: 0}
	if ra, rb := rank[a.Status.Phase], rank[b.Status.Phase]; ra != rb {
		return ra > rb
	}
	ta, readyA := readySince(a)
	tb, readyB := readySince(b)
	if readyA != readyB {
		return readyA
	}
	if readyA && !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if ca, cb := restarts(a), restarts(b); ca != cb {
		return ca < cb
	}
	return a.CreationTimestamp.Before(&b.CreationTimestamp)
}

func readySince(p *corev1.Pod) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time, c.Status == corev1.ConditionTrue
		}
	}
	return time.Time{}, false
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n = max(n, c.RestartCount)
	}
	return n
}

// findContainer looks a container up by name among the app, ephemeral and init containers.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
			return &c
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// defaultContainer is the container a command goes to when -c names none: the one the
// default-container annotation names, else the first. notice is kubectl's "Defaulted
// container" line, set when the pod has other containers to choose from and no annotation
// decided.
func defaultContainer(pod *corev1.Pod) (c *corev1.Container, notice string, err error) {
	if len(pod.Spec.Containers) == 0 {
		return nil, "", fmt.Errorf("pod %s/%s does not have any containers", pod.Namespace, pod.Name)
	}
	if name := pod.Annotations[defaultContainerAnnotation]; name != "" {
		if c := findContainer(pod, name); c != nil {
			return c, "", nil
		}
	}
	c = &pod.Spec.Containers[0]
	if len(pod.Spec.Containers) > 1 || len(pod.Spec.InitContainers) > 0 || len(pod.Spec.EphemeralContainers) > 0 {
		notice = fmt.Sprintf("Defaulted container %q out of: %s", c.Name, containerNames(pod))
	}
	return c, notice, nil
}

// containerNames lists the pod's containers as kubectl's notices do.
func containerNames(pod *corev1.Pod) string {
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name+" (ephem)")
	}
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name+" (init)")
	}
	return strings.Join(names, ", ")
}
