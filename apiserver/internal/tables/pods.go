package tables

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod is how kubectl get shows Pods.
var Pod = NewPrinter(podColumns, podRow)

var podColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
	{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
	{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
	ageColumn,
	{Name: "IP", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["podIP"]},
	{Name: "Node", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["nodeName"]},
	{Name: "Nominated Node", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]},
	{Name: "Readiness Gates", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["readinessGates"]},
}

// nodeLostReason is what the node lifecycle controller sets on pods of an unreachable node.
const nodeLostReason = "NodeLost"

func podRow(pod *corev1.Pod, now time.Time) metav1.TableRow {
	s := summarizePod(pod)

	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, age(s.lastRestart, now))
	}

	row := metav1.TableRow{Cells: []any{
		pod.Name,
		fmt.Sprintf("%d/%d", s.ready, s.total),
		s.status,
		restarts,
		age(pod.CreationTimestamp, now),
		orNone(podIP(pod)),
		orNone(pod.Spec.NodeName),
		orNone(pod.Status.NominatedNodeName),
		readinessGates(pod),
	}}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
	}
	return row
}

// podSummary is what kubectl condenses a pod's status into.
type podSummary struct {
	ready, total int
	status       string
	restarts     int
	lastRestart  metav1.Time
}

// summarizePod follows kubectl's rules: the phase (or status reason) is overridden by the
// first init container that has not finished, else by the last app container that is
// waiting or terminated; sidecars (restartable init containers) count as containers; a pod
// being deleted shows Terminating unless it already finished.
func summarizePod(pod *corev1.Pod) podSummary {
	s := podSummary{total: len(pod.Spec.Containers), status: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		s.status = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			s.status = corev1.PodReasonSchedulingGated
		}
	}

	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			s.total++
		}
	}

	// Restarts of plain init containers only count while the pod is still initializing.
	var sidecarRestarts int
	var lastSidecarRestart metav1.Time
	initializing := false
	for i, cs := range pod.Status.InitContainerStatuses {
		s.restarts += int(cs.RestartCount)
		later(&s.lastRestart, cs.LastTerminationState)
		if sidecars[cs.Name] {
			sidecarRestarts += int(cs.RestartCount)
			later(&lastSidecarRestart, cs.LastTerminationState)
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				s.ready++
			}
			continue
		case cs.State.Terminated != nil:
			s.status = "Init:" + terminatedReason(cs.State.Terminated)
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			s.status = "Init:" + cs.State.Waiting.Reason
		default:
			s.status = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || hasCondition(pod.Status.Conditions, corev1.PodInitialized) {
		s.restarts, s.lastRestart = sidecarRestarts, lastSidecarRestart
		running := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := pod.Status.ContainerStatuses[i]
			s.restarts += int(cs.RestartCount)
			later(&s.lastRestart, cs.LastTerminationState)
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				s.status = cs.State.Waiting.Reason
			case cs.State.Terminated != nil:
				s.status = terminatedReason(cs.State.Terminated)
			case cs.Ready && cs.State.Running != nil:
				running = true
				s.ready++
			}
		}
		// A finished container must not hide others that still run.
		if s.status == "Completed" && running {
			if hasCondition(pod.Status.Conditions, corev1.PodReady) {
				s.status = "Running"
			} else {
				s.status = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		if pod.Status.Reason == nodeLostReason {
			s.status = "Unknown"
		} else if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			s.status = "Terminating"
		}
	}
	return s
}

// terminatedReason is the reason a container stopped, or its signal or exit code when the
// runtime gave no reason.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// later moves *last forward to when the previous run of a container finished.
func later(last *metav1.Time, prev corev1.ContainerState) {
	if prev.Terminated == nil {
		return
	}
	if finished := prev.Terminated.FinishedAt; last.Before(&finished) {
		*last = finished
	}
}

func hasCondition(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func podIP(pod *corev1.Pod) string {
	if len(pod.Status.PodIPs) > 0 {
		return pod.Status.PodIPs[0].IP
	}
	return pod.Status.PodIP
}

func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	met := 0
	for _, g := range pod.Spec.ReadinessGates {
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType {
				if c.Status == corev1.ConditionTrue {
					met++
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d/%d", met, len(pod.Spec.ReadinessGates))
}
