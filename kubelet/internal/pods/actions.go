package pods

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
)

// killInfo says why a running container is stopped.
type killInfo struct {
	name    string
	message string
	// probe is "liveness" or "startup" when a probe failure caused the kill.
	probe string
}

// actions is what one sync must do to bring a pod's containers to its spec; the plan is
// computed purely from the spec and what the runtime reports, as Kubernetes'
// computePodActions does.
type actions struct {
	// killPod stops every container and the sandbox (and, with createSandbox, starts over).
	killPod       bool
	createSandbox bool
	// sandboxID is the running sandbox to keep when createSandbox is false.
	sandboxID string
	// attempt numbers the sandbox to create.
	attempt int
	// nextInit is the index of the init container to start, -1 for none.
	nextInit int
	// start lists indexes of app containers to start.
	start []int
	// startEphemeral lists indexes of ephemeral containers to start.
	startEphemeral []int
	// kill maps running container ids to stop.
	kill map[string]killInfo
	// remove lists ids of exited containers no longer worth keeping.
	remove []string
	// backingOff names containers that should start but wait for their back-off.
	backingOff []string
}

// actionInput is what computeActions decides from.
type actionInput struct {
	pod *corev1.Pod
	obs observed
	// unhealthy maps running container ids to the probe ("liveness" or "startup") that failed.
	unhealthy map[string]string
	// inBackOff names containers that may not be restarted yet.
	inBackOff map[string]bool
}

func restartOnFailure(pod *corev1.Pod) bool {
	return pod.Spec.RestartPolicy != corev1.RestartPolicyNever
}

func computeActions(in actionInput) actions {
	a := computeStartKill(in)
	a.remove = removable(in.pod, in.obs, a)
	var start []int
	for _, i := range a.start {
		name := in.pod.Spec.Containers[i].Name
		if in.inBackOff[name] {
			a.backingOff = append(a.backingOff, name)
			continue
		}
		start = append(start, i)
	}
	a.start = start
	if a.nextInit >= 0 {
		if name := in.pod.Spec.InitContainers[a.nextInit].Name; in.inBackOff[name] {
			a.backingOff = append(a.backingOff, name)
			a.nextInit = -1
		}
	}
	return a
}

func computeStartKill(in actionInput) actions {
	pod, obs := in.pod, in.obs
	a := actions{nextInit: -1, kill: map[string]killInfo{}}

	create, attempt, sandboxID := sandboxChanged(pod, obs)
	a.sandboxID = sandboxID
	if create {
		a.killPod = true
		a.createSandbox = true
		a.attempt = attempt
		// A pod that must not restart keeps its dead sandbox once its containers have run:
		// their exit codes decide its phase.
		if !restartOnFailure(pod) && attempt != 0 && len(obs.containers) != 0 {
			a.createSandbox = false
			return a
		}
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && succeeded(obs.latest(c.Name)) {
				continue
			}
			a.start = append(a.start, i)
		}
		if len(a.start) == 0 {
			a.createSandbox = false
			return a
		}
		if len(pod.Spec.InitContainers) != 0 {
			a.start = nil
			a.nextInit = 0
		}
		return a
	}

	// Ephemeral containers may start while the pod initialises, as in Kubernetes.
	a.startEphemeral = ephemeralToStart(pod, obs)
	last, next, done := nextInitContainer(pod, obs)
	if !done {
		if next >= 0 {
			if last != nil && initFailed(last) && !restartOnFailure(pod) {
				a.killPod = true
			} else {
				a.nextInit = next
			}
		}
		return a
	}

	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cur := obs.latest(c.Name)
		if cur == nil || cur.State != runtime.StateRunning {
			if shouldRestart(pod, cur) {
				a.start = append(a.start, i)
				if cur != nil && cur.State != runtime.StateExited {
					// A created or unknown container may hold the name's resources: stop it first.
					a.kill[cur.ID] = killInfo{name: c.Name, message: fmt.Sprintf("Container %s is in an unknown state, will be restarted", c.Name)}
				}
			}
			continue
		}
		restart := restartOnFailure(pod)
		var info killInfo
		switch {
		case cur.Labels[spec.LabelContainerHash] != spec.Hash(c):
			info = killInfo{name: c.Name, message: fmt.Sprintf("Container %s definition changed", c.Name)}
			// A changed spec replaces the container whatever the restart policy.
			restart = true
		case in.unhealthy[cur.ID] == "liveness":
			info = killInfo{name: c.Name, message: fmt.Sprintf("Container %s failed liveness probe", c.Name), probe: "liveness"}
		case in.unhealthy[cur.ID] == "startup":
			info = killInfo{name: c.Name, message: fmt.Sprintf("Container %s failed startup probe", c.Name), probe: "startup"}
		default:
			keep++
			continue
		}
		if restart {
			info.message += ", will be restarted"
			a.start = append(a.start, i)
		}
		a.kill[cur.ID] = info
	}
	// Containers no longer in the spec have no business running.
	for name, cs := range obs.containers {
		if inSpec(pod, name) {
			continue
		}
		for _, c := range cs {
			if c.State == runtime.StateRunning {
				a.kill[c.ID] = killInfo{name: name, message: fmt.Sprintf("Container %s is not in the pod spec", name)}
			}
		}
	}
	if keep == 0 && len(a.start) == 0 {
		a.killPod = true
	}
	return a
}

// ephemeralToStart lists the ephemeral containers never started: they run once and are never
// restarted. One that targets a container waits for it to run, since it joins its processes.
func ephemeralToStart(pod *corev1.Pod, obs observed) []int {
	var out []int
	for i, ec := range pod.Spec.EphemeralContainers {
		if obs.latest(ec.Name) != nil {
			continue
		}
		if t := ec.TargetContainerName; t != "" {
			if cur := obs.latest(t); cur == nil || cur.State != runtime.StateRunning {
				continue
			}
		}
		out = append(out, i)
	}
	return out
}

// sandboxChanged reports whether the pod needs a new sandbox, the attempt number to give it,
// and otherwise the id of the running one.
func sandboxChanged(pod *corev1.Pod, obs observed) (bool, int, string) {
	if len(obs.sandboxes) == 0 {
		return true, 0, ""
	}
	newest := obs.sandboxes[0]
	next := spec.Restarts(newest) + 1
	running := 0
	for _, s := range obs.sandboxes {
		if s.State == runtime.StateRunning {
			running++
		}
	}
	if newest.State != runtime.StateRunning || running > 1 {
		return true, next, ""
	}
	if newest.Labels[spec.LabelContainerHash] != spec.SandboxHash(pod) {
		return true, next, ""
	}
	return false, spec.Restarts(newest), newest.ID
}

// nextInitContainer finds the init container to run next. last is the newest attempt of a
// failed one (nil if none failed); next is -1 when nothing is to start now; done means every
// init container has completed.
func nextInitContainer(pod *corev1.Pod, obs observed) (last *runtime.Container, next int, done bool) {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return nil, -1, true
	}
	// A running app container proves initialisation finished, even if the exited init
	// containers have since been removed.
	for _, c := range pod.Spec.Containers {
		if cur := obs.latest(c.Name); cur != nil && cur.State == runtime.StateRunning {
			return nil, -1, true
		}
	}
	for i := len(inits) - 1; i >= 0; i-- {
		if cur := obs.latest(inits[i].Name); cur != nil && initFailed(cur) {
			return cur, i, false
		}
	}
	for i := len(inits) - 1; i >= 0; i-- {
		cur := obs.latest(inits[i].Name)
		if cur == nil {
			continue
		}
		if cur.State == runtime.StateRunning {
			return nil, -1, false
		}
		if cur.State == runtime.StateExited {
			if i == len(inits)-1 {
				return nil, -1, true
			}
			return nil, i + 1, false
		}
	}
	return nil, 0, false
}

func initFailed(c *runtime.Container) bool {
	switch c.State {
	case runtime.StateExited:
		return c.ExitCode != 0
	case runtime.StateRunning:
		return false
	}
	// Created but never started, or unknown: it did not complete.
	return true
}

func succeeded(c *runtime.Container) bool {
	return c != nil && c.State == runtime.StateExited && c.ExitCode == 0
}

// shouldRestart is Kubernetes' ShouldContainerBeRestarted for a container that is not running.
func shouldRestart(pod *corev1.Pod, cur *runtime.Container) bool {
	if cur == nil {
		return true
	}
	if cur.State != runtime.StateExited {
		return true
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return cur.ExitCode != 0
	}
	return true
}

func inSpec(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// removable lists exited containers beyond the newest exited attempt of each name (kept for
// `logs --previous` and exit codes), and exited sandboxes other than the newest.
func removable(pod *corev1.Pod, obs observed, a actions) []string {
	var out []string
	for _, cs := range obs.containers {
		keptExited := false
		for _, c := range cs {
			if c.State == runtime.StateRunning {
				continue
			}
			if _, killing := a.kill[c.ID]; killing {
				continue
			}
			if !keptExited && c.State == runtime.StateExited {
				keptExited = true
				continue
			}
			if c.State == runtime.StateExited {
				out = append(out, c.ID)
			}
		}
	}
	for i, s := range obs.sandboxes {
		if i > 0 && s.State != runtime.StateRunning {
			out = append(out, s.ID)
		}
	}
	return out
}
