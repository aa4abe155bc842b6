package pods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/network"
	"minik8s.io/kubelet/internal/pods/prober"
	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/pods/status"
	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/shared/backoff"
	"minik8s.io/shared/imageref"
)

func podRef(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// formatPod names a pod in messages the way Kubernetes' format.Pod does.
func formatPod(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// list returns the pod's containers with their full state. Runtimes list only ids, labels and
// states cheaply (Docker's list has no exit codes or times), so each container is inspected
// once per state it is seen in and the answer kept: a container's details only change with
// its state.
//
// A new pod's first list is skipped when it can only be empty: the PLEG has relisted since
// the kubelet started and saw no container of the pod, and this worker, the only one that
// creates containers for it, has created none. On an engine busy starting other pods, a list
// waits behind them.
func (m *Manager) list(ctx context.Context, w *worker) (observed, error) {
	if !w.created && len(w.inspected) == 0 {
		if has, relisted := m.pleg.HasContainers(string(w.uid)); relisted && !has {
			return observe(nil), nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	list, err := m.cfg.Runtime.List(ctx, map[string]string{spec.LabelPodUID: string(w.uid)})
	if err != nil {
		return observed{}, fmt.Errorf("list containers of pod %s: %w", w.uid, err)
	}
	full := make([]runtime.Container, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, c := range list {
		seen[c.ID] = true
		if known, ok := w.inspected[c.ID]; ok && sameState(known, c.State) {
			full = append(full, known)
			continue
		}
		d, err := m.cfg.Runtime.Inspect(ctx, c.ID)
		if errors.Is(err, runtime.ErrNotFound) {
			continue
		}
		if err != nil {
			return observed{}, fmt.Errorf("inspect container of pod %s: %w", w.uid, err)
		}
		if d.Labels == nil {
			d.Labels = c.Labels
		}
		d = settle(d)
		w.inspected[c.ID] = d
		full = append(full, d)
	}
	for id := range w.inspected {
		if !seen[id] {
			delete(w.inspected, id)
		}
	}
	return observe(full), nil
}

// relist returns the pod's containers after execute: obs itself when the sync changed
// nothing, obs plus the containers it created (inspected one by one) when it only created,
// and a full list when it stopped or removed any. Every list of an engine that is starting
// containers waits behind those starts, so the common syncs avoid it. The price: a container
// that exited while this sync was creating others is reported in its earlier state until the
// PLEG's next relist (a period at most) wakes the worker again.
func (m *Manager) relist(ctx context.Context, w *worker, obs observed, st *syncState) (observed, error) {
	switch {
	case st.disrupted:
		return m.list(ctx, w)
	case len(st.created) == 0:
		return obs, nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	full := obs.all()
	for _, id := range st.created {
		d, err := m.cfg.Runtime.Inspect(ctx, id)
		if errors.Is(err, runtime.ErrNotFound) {
			return m.list(ctx, w)
		}
		if err != nil {
			return observed{}, fmt.Errorf("inspect container of pod %s: %w", w.uid, err)
		}
		d = settle(d)
		w.inspected[id] = d
		full = append(full, d)
	}
	return observe(full), nil
}

// syncPod brings one pod's containers to its desired state and reports its status. ctx is the
// worker's: it outlives the sync, so probe workers started here live as long as the worker.
func (m *Manager) syncPod(ctx context.Context, w *worker, pod *corev1.Pod, removed bool) outcome {
	uid := string(w.uid)
	log := m.log.With("pod", uid)
	if pod != nil {
		log = m.log.With("pod", podRef(pod))
	}
	obs, err := m.list(ctx, w)
	if err != nil {
		log.Warn("sync failed", "err", err)
		return outcome{after: retryDelay}
	}
	if pod == nil || removed || pod.DeletionTimestamp != nil {
		return m.terminate(ctx, w, pod, removed, obs, log)
	}

	unhealthy := map[string]string{}
	for _, c := range obs.running() {
		if r, _ := m.prober.Get(c.ID, prober.Liveness); r == prober.Failure {
			unhealthy[c.ID] = "liveness"
		} else if r, _ := m.prober.Get(c.ID, prober.Startup); r == prober.Failure {
			unhealthy[c.ID] = "startup"
		}
	}
	st := &syncState{waiting: map[string]status.Waiting{}}
	inBackOff := m.crashBackOff(w, pod, obs, st)
	acts := computeActions(actionInput{pod: pod, obs: obs, unhealthy: unhealthy, inBackOff: inBackOff})
	// Only containers that would restart show CrashLoopBackOff; the others show how they ended.
	backing := map[string]bool{}
	for _, name := range acts.backingOff {
		backing[name] = true
	}
	for name := range st.waiting {
		if !backing[name] {
			delete(st.waiting, name)
		}
	}
	if err := m.execute(ctx, w, pod, obs, acts, st); err != nil {
		log.Warn("sync failed", "err", err)
		st.out.soon(retryDelay)
	}

	if obs, err = m.relist(ctx, w, obs, st); err != nil {
		log.Warn("sync failed", "err", err)
		st.out.soon(retryDelay)
		return st.out
	}
	m.syncProbes(ctx, w, pod, obs)
	m.writeStatus(ctx, w, pod, obs, st, log)
	return st.out
}

// crashBackOff finds containers that may not be restarted yet: their last attempt exited, or
// could not even be created, less than their back-off ago.
func (m *Manager) crashBackOff(w *worker, pod *corev1.Pod, obs observed, st *syncState) map[string]bool {
	out := map[string]bool{}
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		key := backoff.Key(string(pod.UID), c.Name)
		var since time.Time
		var waiting status.Waiting
		if f, ok := w.createFailed[c.Name]; ok {
			// The newest attempt left no container: it shows why, as Kubernetes does.
			since, waiting = f.at, f.waiting
		} else if cur := obs.latest(c.Name); cur != nil && cur.State == runtime.StateExited {
			since = cur.FinishedAt
			waiting = status.Waiting{
				Reason:  "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", m.crash.Delay(key), c.Name, formatPod(pod)),
			}
		} else {
			continue
		}
		left := m.crash.Remaining(key, since)
		if left <= 0 {
			continue
		}
		out[c.Name] = true
		st.waiting[c.Name] = waiting
		st.out.soon(left)
	}
	return out
}

func (m *Manager) execute(ctx context.Context, w *worker, pod *corev1.Pod, obs observed, a actions, st *syncState) error {
	for name, waiting := range st.waiting {
		if waiting.Reason == "CrashLoopBackOff" {
			m.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", name, formatPod(pod))
		}
	}
	var errs []error
	st.disrupted = a.killPod || len(a.kill) > 0 || len(a.remove) > 0
	if a.killPod {
		if a.createSandbox && a.attempt > 0 {
			m.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
		}
		if err := m.killPod(ctx, w, pod, obs, grace(pod, false)); err != nil {
			return err
		}
		if !a.createSandbox {
			for _, id := range a.remove {
				if err := m.remove(ctx, id); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		}
	}
	for id, k := range a.kill {
		msg := k.message
		if k.probe == "" {
			msg = fmt.Sprintf("Stopping container %s", k.name)
		}
		m.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, "Killing", "%s", msg)
		if err := m.stop(ctx, id, grace(pod, false)); err != nil {
			errs = append(errs, err)
		}
	}
	for _, id := range a.remove {
		if err := m.remove(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	sandboxID := a.sandboxID
	if a.createSandbox {
		id, err := m.createSandbox(ctx, w, pod, a.attempt)
		if id != "" {
			st.created = append(st.created, id)
		}
		if err != nil {
			st.disrupted = true // a sandbox that failed half-way was discarded
			m.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
			return err
		}
		sandboxID = id
	} else if err := m.ensureNetwork(ctx, w, pod, sandboxID); err != nil {
		return err
	}
	env := spec.Env{PodIP: w.ips[sandboxID], HostIP: m.cfg.HostIP, NodeName: m.cfg.NodeName, ResolvConf: m.resolvConf(pod)}
	if a.nextInit < 0 && len(a.start) == 0 && len(a.startEphemeral) == 0 {
		if len(obs.running()) > 0 {
			m.refreshVolumes(ctx, w, pod, env, st)
		}
		return nil
	}
	env.Hosts = m.writeHosts(pod, env.PodIP)
	volumes, err := m.builder.Volumes(ctx, pod, env)
	if err != nil {
		m.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "Unable to mount volumes for pod %s: %v", formatPod(pod), err)
		return err
	}
	w.volumesAt = m.cfg.Clock.Now()
	m.refreshLater(pod, st)
	if a.nextInit >= 0 {
		c := &pod.Spec.InitContainers[a.nextInit]
		m.startContainer(ctx, w, pod, c, obs.latest(c.Name), sandboxID, "", env, volumes, st)
	}
	for _, i := range a.start {
		c := &pod.Spec.Containers[i]
		m.startContainer(ctx, w, pod, c, obs.latest(c.Name), sandboxID, "", env, volumes, st)
	}
	for _, i := range a.startEphemeral {
		ec := &pod.Spec.EphemeralContainers[i]
		target := ""
		if cur := obs.latest(ec.TargetContainerName); ec.TargetContainerName != "" && cur != nil {
			target = cur.ID
		}
		c := corev1.Container(ec.EphemeralContainerCommon)
		m.startContainer(ctx, w, pod, &c, nil, sandboxID, target, env, volumes, st)
	}
	return nil
}

// createSandbox starts a pod's pause container and attaches it to the network. A sandbox that
// cannot be attached is removed, so the next sync starts over with a fresh one.
func (m *Manager) createSandbox(ctx context.Context, w *worker, pod *corev1.Pod, attempt int) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cfg := m.builder.Sandbox(pod, attempt)
	if err := m.writeResolvConf(pod); err != nil {
		return "", fmt.Errorf("create sandbox: %w", err)
	}
	if !m.images.present(cfg.Image) {
		ok, err := m.cfg.Runtime.ImagePresent(cctx, cfg.Image)
		if err == nil && !ok {
			err = m.cfg.Runtime.Pull(cctx, cfg.Image)
			if err != nil {
				return "", fmt.Errorf("sandbox image %s: %w", cfg.Image, err)
			}
		}
		if err == nil {
			m.images.mark(cfg.Image)
		}
	}
	w.created = true // a create that timed out may still have made one
	id, err := m.cfg.Runtime.Create(cctx, cfg)
	if err != nil {
		if errors.Is(err, runtime.ErrImageNotFound) {
			m.images.forget(cfg.Image)
		}
		return "", fmt.Errorf("create sandbox: %w", err)
	}
	if err := m.cfg.Runtime.Start(cctx, id); err != nil {
		m.discard(ctx, id)
		return "", fmt.Errorf("start sandbox: %w", err)
	}
	if err := m.ensureNetwork(ctx, w, pod, id); err != nil {
		m.discard(ctx, id)
		return "", err
	}
	return id, nil
}

// ensureNetwork attaches the sandbox (again: SetUp is idempotent, so an adopted sandbox gets
// its address back) unless this worker already did. A sandbox on the node's network has
// nothing to attach: the pod's address is the node's.
func (m *Manager) ensureNetwork(ctx context.Context, w *worker, pod *corev1.Pod, sandboxID string) error {
	if _, ok := w.ips[sandboxID]; ok || sandboxID == "" {
		return nil
	}
	if pod.Spec.HostNetwork {
		w.ips[sandboxID] = m.cfg.HostIP
		w.podIP = m.cfg.HostIP
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	netns, err := m.cfg.Runtime.NetNS(cctx, sandboxID)
	if err != nil {
		return fmt.Errorf("sandbox netns: %w", err)
	}
	ip, err := m.cfg.Network.SetUp(cctx, netPod(pod, sandboxID, netns))
	if err != nil {
		return fmt.Errorf("set up pod network: %w", err)
	}
	w.ips[sandboxID] = ip
	w.podIP = ip
	delete(w.tornDown, sandboxID)
	return nil
}

func netPod(pod *corev1.Pod, sandboxID, netns string) network.Pod {
	np := network.Pod{ID: sandboxID, Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), NetNS: netns}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			proto := "tcp"
			if p.Protocol != "" {
				proto = string(p.Protocol)
			}
			np.Ports = append(np.Ports, network.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: strings.ToLower(proto), HostIP: p.HostIP})
		}
	}
	return np
}

// startContainer pulls, creates and starts one container. Failures are not errors of the sync:
// they show in the container's Waiting state and in events, and the container is retried
// after its back-off. pidTarget is the id of the container whose processes it shares (an
// ephemeral container's target), empty for none.
func (m *Manager) startContainer(ctx context.Context, w *worker, pod *corev1.Pod, c *corev1.Container, prev *runtime.Container, sandboxID, pidTarget string, env spec.Env, volumes map[string]string, st *syncState) {
	if !m.ensureImage(ctx, w, pod, c, st) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	restarts := 0
	if prev != nil {
		restarts = spec.Restarts(*prev) + 1
	}
	// Every attempt after the first lengthens the back-off before the next, whether it then
	// starts or not: a container that cannot start waits as long as one that keeps exiting.
	key := backoff.Key(string(pod.UID), c.Name)
	if _, failedBefore := w.createFailed[c.Name]; prev != nil || failedBefore {
		m.crash.Next(key, m.ranFor(prev))
	}
	cfg, err := m.builder.Container(cctx, pod, c, sandboxID, restarts, env, volumes)
	if err != nil {
		// A missing ConfigMap or Secret costs nothing to look for again, and may appear
		// any moment: it is retried on every sync, as Kubernetes does, without back-off.
		m.failed(pod, c, st, "CreateContainerConfigError", err)
		return
	}
	if pidTarget != "" {
		cfg.PidMode = "container:" + pidTarget
	}
	w.created = true
	id, err := m.cfg.Runtime.Create(cctx, cfg)
	if err != nil {
		if errors.Is(err, runtime.ErrImageNotFound) {
			m.images.forget(c.Image)
		}
		m.createFailed(w, pod, c, st, "CreateContainerError", err)
		return
	}
	delete(w.createFailed, c.Name)
	st.created = append(st.created, id)
	m.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, "Created", "Created container %s", c.Name)
	if err := m.cfg.Runtime.Start(cctx, id); err != nil {
		// The container stays, as the runtime left it: its error and exit code are the
		// attempt's termination, and its restart count the next attempt's number.
		m.failed(pod, c, st, "RunContainerError", err)
		return
	}
	m.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, "Started", "Started container %s", c.Name)
}

// ranFor is how long the attempt before this one ran: zero for one that never started.
func (m *Manager) ranFor(prev *runtime.Container) time.Duration {
	switch {
	case prev == nil || prev.StartedAt.IsZero():
		return 0
	case prev.State == runtime.StateRunning:
		return m.cfg.Clock.Since(prev.StartedAt)
	}
	return prev.FinishedAt.Sub(prev.StartedAt)
}

func (m *Manager) failed(pod *corev1.Pod, c *corev1.Container, st *syncState, reason string, err error) {
	m.log.Warn("start container failed", "pod", podRef(pod), "container", c.Name, "reason", reason, "err", err)
	m.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
	st.waiting[c.Name] = status.Waiting{Reason: reason, Message: err.Error()}
	st.out.soon(retryDelay * 10)
}

// createFailed records an attempt that left no container, so the next one waits for the
// container's back-off and the reason stays in its status meanwhile.
func (m *Manager) createFailed(w *worker, pod *corev1.Pod, c *corev1.Container, st *syncState, reason string, err error) {
	m.failed(pod, c, st, reason, err)
	w.createFailed[c.Name] = createFailure{at: m.cfg.Clock.Now(), waiting: st.waiting[c.Name]}
}

// ensureImage makes the container's image present per its pull policy and reports whether it
// is; when not, the reason is in st.waiting.
func (m *Manager) ensureImage(ctx context.Context, w *worker, pod *corev1.Pod, c *corev1.Container, st *syncState) bool {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	policy := c.ImagePullPolicy
	if policy == "" {
		policy = imageref.PullPolicy(c.Image)
	}
	present := policy != corev1.PullAlways && m.images.present(c.Image)
	if !present {
		var err error
		if present, err = m.cfg.Runtime.ImagePresent(ctx, c.Image); err != nil {
			m.failed(pod, c, st, "ErrImagePull", err)
			return false
		}
		if present {
			m.images.mark(c.Image)
		}
	}
	switch {
	case policy == corev1.PullNever && !present:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		m.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, "ErrImageNeverPull", "%s", msg)
		st.waiting[c.Name] = status.Waiting{Reason: "ErrImageNeverPull", Message: msg}
		st.out.soon(retryDelay * 10)
		return false
	case policy != corev1.PullAlways && present:
		m.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return true
	}
	key := backoff.Key(string(pod.UID), c.Name)
	if failedAt, ok := w.pullFailed[c.Name]; ok {
		if left := m.pulls.Remaining(key, failedAt); left > 0 {
			msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
			m.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, "BackOff", "%s", msg)
			st.waiting[c.Name] = status.Waiting{Reason: "ImagePullBackOff", Message: msg}
			st.out.soon(left)
			return false
		}
	}
	m.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	err := m.cfg.Runtime.Pull(ctx, c.Image)
	switch {
	case err == nil:
		m.images.mark(c.Image)
		delete(w.pullFailed, c.Name)
		m.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q", c.Image)
		return true
	case present && errors.Is(err, runtime.ErrRegistryUnavailable):
		// Machines without a registry run what they have: Always degrades to the local image.
		m.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return true
	}
	m.pulls.Next(key, 0)
	w.pullFailed[c.Name] = m.cfg.Clock.Now()
	m.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
	st.waiting[c.Name] = status.Waiting{Reason: "ErrImagePull", Message: err.Error()}
	st.out.soon(m.pulls.Delay(key))
	return false
}

// grace is the pod's termination grace period: the deletion's when deleting.
func grace(pod *corev1.Pod, deleting bool) time.Duration {
	if pod == nil {
		return defaultGrace
	}
	if deleting && pod.DeletionGracePeriodSeconds != nil {
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return defaultGrace
}

func (m *Manager) syncProbes(ctx context.Context, w *worker, pod *corev1.Pod, obs observed) {
	wasReady := map[string]bool{}
	for _, cs := range pod.Status.ContainerStatuses {
		wasReady[cs.ContainerID] = cs.Ready
	}
	var targets []prober.Target
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cur := obs.latest(c.Name)
		if cur == nil || cur.State != runtime.StateRunning {
			continue
		}
		targets = append(targets, prober.Target{
			Pod: pod, PodIP: w.podIP, Container: c, ContainerID: cur.ID, StartedAt: cur.StartedAt,
			WasReady: wasReady["docker://"+cur.ID],
		})
	}
	m.prober.Sync(ctx, string(pod.UID), targets)
}

func (m *Manager) writeStatus(ctx context.Context, w *worker, pod *corev1.Pod, obs observed, st *syncState, log *slog.Logger) {
	ready, started := map[string]bool{}, map[string]bool{}
	for _, c := range obs.running() {
		r, _ := m.prober.Get(c.ID, prober.Readiness)
		ready[c.ID] = r == prober.Success
		s, _ := m.prober.Get(c.ID, prober.Startup)
		started[c.ID] = s == prober.Success
	}
	prev := m.status.Previous(pod)
	ip := w.podIP
	if ip == "" {
		// A finished pod adopted after a restart has no attached sandbox left; its address
		// stays what it was, as in Kubernetes.
		ip = prev.PodIP
	}
	computed := status.Compute(status.Input{
		Pod: pod, Previous: prev, Containers: obs.all(), PodIP: ip, HostIP: m.cfg.HostIP,
		Waiting: st.waiting, Ready: ready, Started: started, Now: m.cfg.Clock.Now(),
	})
	if m.cfg.Status == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := m.status.Set(ctx, pod, computed); err != nil {
		log.Warn("status write failed", "err", err)
		st.out.soon(retryDelay)
	}
}
