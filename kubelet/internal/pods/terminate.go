package pods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/network"
	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
)

// terminate stops and removes everything of a pod that is being deleted, was removed from the
// API or was never known (an orphan), then finalizes a deleted pod.
func (m *Manager) terminate(ctx context.Context, w *worker, pod *corev1.Pod, removed bool, obs observed, log *slog.Logger) outcome {
	g := grace(pod, true)
	if err := m.killPod(ctx, w, pod, obs, g); err != nil {
		log.Warn("terminate failed", "err", err)
		return outcome{after: retryDelay}
	}
	var errs []error
	for _, c := range obs.all() {
		if err := m.remove(ctx, c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		log.Warn("terminate failed", "err", err)
		return outcome{after: retryDelay}
	}
	if err := os.RemoveAll(m.builder.PodDir(string(w.uid))); err != nil {
		log.Warn("terminate failed", "err", fmt.Errorf("remove pod dir: %w", err))
		return outcome{after: retryDelay}
	}
	m.prober.RemovePod(string(w.uid))
	m.crash.Forget(string(w.uid))
	m.pulls.Forget(string(w.uid))
	m.status.Forget(w.uid)
	if m.cfg.Tokens != nil {
		m.cfg.Tokens.DeleteServiceAccountToken(w.uid)
	}
	if pod == nil || removed {
		log.Info("pod cleaned up")
		return outcome{done: true}
	}
	fctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if m.cfg.Finalizer != nil {
		if err := m.cfg.Finalizer.Finalize(fctx, pod); err != nil {
			log.Warn("finalize failed", "err", err)
			return outcome{after: retryDelay}
		}
	}
	log.Info("pod terminated")
	return outcome{done: true, finalized: true}
}

// killPod stops the app and init containers in parallel with the grace period, then detaches
// and stops the sandboxes: the network goes last so containers can finish requests in flight.
func (m *Manager) killPod(ctx context.Context, w *worker, pod *corev1.Pod, obs observed, g time.Duration) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, c := range obs.running() {
		if pod != nil {
			m.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, "Killing", "Stopping container %s", containerName(c))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.stop(ctx, c.ID, g); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, s := range obs.sandboxes {
		running := s.State == runtime.StateRunning
		if !running && w.tornDown[s.ID] {
			continue
		}
		if err := m.tearDown(ctx, pod, s); err != nil {
			return err
		}
		w.tornDown[s.ID] = true
		delete(w.ips, s.ID)
		if running {
			// The pause process has nothing to finish.
			if err := m.stop(ctx, s.ID, 2*time.Second); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Manager) tearDown(ctx context.Context, pod *corev1.Pod, s runtime.Container) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	np := network.Pod{ID: s.ID, UID: s.Labels[spec.LabelPodUID], Name: s.Labels[spec.LabelPodName], Namespace: s.Labels[spec.LabelPodNamespace]}
	if pod != nil {
		if pod.Spec.HostNetwork {
			return nil // never attached
		}
		np = netPod(pod, s.ID, "")
	}
	if s.State == runtime.StateRunning {
		// Without a namespace path, plugins still release the address but cannot clean the
		// interface; a running sandbox has one.
		if ns, err := m.cfg.Runtime.NetNS(ctx, s.ID); err == nil {
			np.NetNS = ns
		}
	}
	if err := m.cfg.Network.TearDown(ctx, np); err != nil {
		return fmt.Errorf("tear down pod network: %w", err)
	}
	return nil
}

func (m *Manager) stop(ctx context.Context, id string, g time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, g+callTimeout)
	defer cancel()
	if err := m.cfg.Runtime.Stop(ctx, id, g); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("stop container %s: %w", short(id), err)
	}
	return nil
}

func (m *Manager) remove(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := m.cfg.Runtime.Remove(ctx, id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("remove container %s: %w", short(id), err)
	}
	return nil
}

// discard removes a container that failed to start; failure only leaves garbage the next
// sync's cleanup removes, so it is logged, not returned.
func (m *Manager) discard(ctx context.Context, id string) {
	if err := m.remove(ctx, id); err != nil {
		m.log.Warn("discard container failed", "err", err)
	}
}

func containerName(c runtime.Container) string {
	if n := c.Labels[spec.LabelContainerName]; n != "" {
		return n
	}
	return c.Name
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
