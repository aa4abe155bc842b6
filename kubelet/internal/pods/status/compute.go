package status

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
)

// Waiting is why a container that should run does not, as the kubelet knows it (back-off,
// image pull failure, configuration error).
type Waiting struct {
	Reason  string
	Message string
}

// Input is everything a pod's status is computed from.
type Input struct {
	// Pod is the desired pod.
	Pod *corev1.Pod
	// Previous is the last status written or read, which supplies the start time, condition
	// transition times and a terminal phase (see Manager.Previous).
	Previous corev1.PodStatus
	// Containers are all the pod's containers, sandbox included, in any order.
	Containers []runtime.Container
	PodIP      string
	HostIP     string
	// Waiting by container name.
	Waiting map[string]Waiting
	// Ready and Started by container id, for containers with readiness / startup probes.
	Ready   map[string]bool
	Started map[string]bool
	Now     time.Time
}

// Compute returns the pod's status.
func Compute(in Input) corev1.PodStatus {
	pod := in.Pod
	old := in.Previous
	byName := map[string][]runtime.Container{}
	for _, c := range in.Containers {
		info, ok := spec.Parse(c.Labels)
		if !ok || info.Sandbox {
			continue
		}
		byName[info.Container] = append(byName[info.Container], c)
	}
	for _, cs := range byName {
		sort.SliceStable(cs, func(i, j int) bool {
			ri, rj := spec.Restarts(cs[i]), spec.Restarts(cs[j])
			if ri != rj {
				return ri > rj
			}
			return cs[i].CreatedAt.After(cs[j].CreatedAt)
		})
	}

	st := corev1.PodStatus{
		HostIP:   in.HostIP,
		QOSClass: QOSClass(pod),
	}
	if in.HostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: in.HostIP}}
	}
	if in.PodIP != "" {
		st.PodIP = in.PodIP
		st.PodIPs = []corev1.PodIP{{IP: in.PodIP}}
	}
	st.StartTime = old.StartTime
	if st.StartTime == nil {
		t := metav1.NewTime(in.Now)
		st.StartTime = &t
	}

	initDone := initialized(pod, byName)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st.InitContainerStatuses = append(st.InitContainerStatuses, containerStatus(c, byName[c.Name], in, "PodInitializing"))
	}
	appWaiting := "ContainerCreating"
	if !initDone {
		appWaiting = "PodInitializing"
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(c, byName[c.Name], in, appWaiting))
	}
	for i := range pod.Spec.EphemeralContainers {
		c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		cs := containerStatus(&c, byName[c.Name], in, "ContainerCreating")
		// Ephemeral containers serve no traffic: never ready, as in Kubernetes.
		cs.Ready = false
		st.EphemeralContainerStatuses = append(st.EphemeralContainerStatuses, cs)
	}

	st.Phase = phase(pod, st)
	if old.Phase == corev1.PodSucceeded || old.Phase == corev1.PodFailed {
		// Terminal phases are final.
		st.Phase = old.Phase
	}
	st.Conditions = conditions(old, st, initDone, in.Now)
	return st
}

func containerStatus(c *corev1.Container, attempts []runtime.Container, in Input, defaultWaiting string) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	f := false
	cs.Started = &f
	if len(attempts) == 0 {
		w := Waiting{Reason: defaultWaiting}
		if kw, ok := in.Waiting[c.Name]; ok {
			w = kw
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		return cs
	}
	cur := attempts[0]
	cs.ContainerID = "docker://" + cur.ID
	cs.ImageID = cur.ImageID
	cs.RestartCount = int32(spec.Restarts(cur))
	var prev *runtime.Container
	if len(attempts) > 1 {
		prev = &attempts[1]
	}
	switch cur.State {
	case runtime.StateRunning:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(cur.StartedAt)}
		started := true
		if c.StartupProbe != nil {
			started = in.Started[cur.ID]
		}
		cs.Started = &started
		cs.Ready = started
		if c.ReadinessProbe != nil {
			cs.Ready = started && in.Ready[cur.ID]
		}
		if prev != nil {
			cs.LastTerminationState.Terminated = terminated(*prev)
		}
	case runtime.StateExited:
		if w, ok := in.Waiting[c.Name]; ok {
			// Waiting to be restarted: the exit just seen is the last termination.
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
			cs.LastTerminationState.Terminated = terminated(cur)
		} else {
			cs.State.Terminated = terminated(cur)
			if prev != nil {
				cs.LastTerminationState.Terminated = terminated(*prev)
			}
		}
	default:
		w := Waiting{Reason: "ContainerCreating"}
		if kw, ok := in.Waiting[c.Name]; ok {
			w = kw
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		if prev != nil {
			cs.LastTerminationState.Terminated = terminated(*prev)
		}
	}
	return cs
}

func terminated(c runtime.Container) *corev1.ContainerStateTerminated {
	reason := "Completed"
	switch {
	case c.OOMKilled:
		reason = "OOMKilled"
	case c.ExitCode != 0:
		reason = "Error"
	}
	switch {
	case c.State != runtime.StateExited:
		reason = "ContainerCannotRun"
	case c.Error != "" && c.StartedAt.IsZero():
		// The runtime could not start it (a command missing from the image, say).
		reason = "StartError"
	}
	return &corev1.ContainerStateTerminated{
		ExitCode:    int32(c.ExitCode),
		Reason:      reason,
		Message:     c.Error,
		StartedAt:   metav1.NewTime(c.StartedAt),
		FinishedAt:  metav1.NewTime(c.FinishedAt),
		ContainerID: "docker://" + c.ID,
	}
}

func initialized(pod *corev1.Pod, byName map[string][]runtime.Container) bool {
	for _, c := range pod.Spec.Containers {
		if cs := byName[c.Name]; len(cs) > 0 {
			// App containers only ever start after initialisation.
			return true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		cs := byName[c.Name]
		if len(cs) == 0 || cs[0].State != runtime.StateExited || cs[0].ExitCode != 0 {
			return false
		}
	}
	return true
}

// phase follows Kubernetes' getPhase.
func phase(pod *corev1.Pod, st corev1.PodStatus) corev1.PodPhase {
	pendingInit, failedInit := 0, 0
	for _, cs := range st.InitContainerStatuses {
		switch {
		case cs.State.Running != nil:
			pendingInit++
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case cs.State.Waiting != nil:
			if t := cs.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 {
				failedInit++
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}
	unknown, running, waiting, stopped, succeededN := 0, 0, 0, 0, 0
	for _, cs := range st.ContainerStatuses {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeededN++
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	if failedInit > 0 && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0 || failedInit > 0:
		return corev1.PodPending
	case waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if pod.Spec.RestartPolicy == corev1.RestartPolicyAlways {
			return corev1.PodRunning
		}
		if stopped == succeededN {
			return corev1.PodSucceeded
		}
		if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

func conditions(old corev1.PodStatus, st corev1.PodStatus, initDone bool, now time.Time) []corev1.PodCondition {
	var out []corev1.PodCondition
	add := func(t corev1.PodConditionType, ok bool, reason, message string) {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message}
		if ok {
			c.Status = corev1.ConditionTrue
			c.Reason, c.Message = "", ""
		}
		c.LastTransitionTime = metav1.NewTime(now)
		for _, o := range old.Conditions {
			if o.Type == t && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	terminal := st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed

	var notInit []string
	if !initDone {
		for _, cs := range st.InitContainerStatuses {
			if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
				notInit = append(notInit, cs.Name)
			}
		}
	}
	initReason := "ContainersNotInitialized"
	if terminal {
		initReason = "PodCompleted"
	}
	add(corev1.PodInitialized, len(notInit) == 0, initReason, fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " ")))

	var notReady []string
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			notReady = append(notReady, cs.Name)
		}
	}
	reason, msg := "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(notReady, " "))
	if terminal {
		reason = "PodCompleted"
	}
	ready := len(notReady) == 0 && !terminal
	add(corev1.ContainersReady, ready, reason, msg)
	add(corev1.PodReady, ready, reason, msg)
	add(corev1.PodScheduled, true, "", "")
	return out
}

// QOSClass classifies a pod as Kubernetes does: Guaranteed when every container limits CPU and
// memory with requests equal to limits, BestEffort when none sets anything, else Burstable.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	anySet, guaranteed := false, true
	for _, c := range all {
		r := c.Resources
		if len(r.Requests) > 0 || len(r.Limits) > 0 {
			anySet = true
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			lim, ok := r.Limits[name]
			if !ok || lim.IsZero() {
				guaranteed = false
				continue
			}
			if req, ok := r.Requests[name]; ok && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !anySet:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
