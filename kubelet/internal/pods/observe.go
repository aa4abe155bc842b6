package pods

import (
	"sort"

	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
)

// observed is one pod's containers as the runtime reports them, grouped by container name,
// newest attempt first.
type observed struct {
	sandboxes  []runtime.Container
	containers map[string][]runtime.Container
}

func observe(list []runtime.Container) observed {
	o := observed{containers: map[string][]runtime.Container{}}
	for _, c := range list {
		info, ok := spec.Parse(c.Labels)
		if !ok {
			continue
		}
		if info.Sandbox {
			o.sandboxes = append(o.sandboxes, c)
			continue
		}
		o.containers[info.Container] = append(o.containers[info.Container], c)
	}
	newestFirst(o.sandboxes)
	for _, cs := range o.containers {
		newestFirst(cs)
	}
	return o
}

// newestFirst orders attempts by their restart count, then by creation: the count survives
// kubelet restarts, creation time breaks ties between containers made by hand.
func newestFirst(cs []runtime.Container) {
	sort.SliceStable(cs, func(i, j int) bool {
		ri, rj := spec.Restarts(cs[i]), spec.Restarts(cs[j])
		if ri != rj {
			return ri > rj
		}
		return cs[i].CreatedAt.After(cs[j].CreatedAt)
	})
}

// latest is the newest attempt of the named container, nil if it never ran.
func (o observed) latest(name string) *runtime.Container {
	if cs := o.containers[name]; len(cs) > 0 {
		return &cs[0]
	}
	return nil
}

// settle reports a container whose start failed as the attempt it was: exited, never
// started, with the runtime's error and exit code. Docker leaves such a container created,
// with the error and no finish time; it will never run, and its attempt counts toward the
// restart count and the back-off like any other.
func settle(c runtime.Container) runtime.Container {
	if c.State != runtime.StateCreated || c.Error == "" {
		return c
	}
	c.State = runtime.StateExited
	if c.FinishedAt.IsZero() {
		c.FinishedAt = c.CreatedAt
	}
	if c.ExitCode == 0 {
		// containerd's code for a task that could not start.
		c.ExitCode = 128
	}
	return c
}

// sameState reports whether a container listed in state listed is still the one inspected
// as known: a failed start lists as created and is known as exited.
func sameState(known runtime.Container, listed runtime.State) bool {
	return known.State == listed || (listed == runtime.StateCreated && known.Error != "")
}

func (o observed) all() []runtime.Container {
	var out []runtime.Container
	out = append(out, o.sandboxes...)
	for _, cs := range o.containers {
		out = append(out, cs...)
	}
	return out
}

func (o observed) running() []runtime.Container {
	var out []runtime.Container
	for _, cs := range o.containers {
		for _, c := range cs {
			if c.State == runtime.StateRunning {
				out = append(out, c)
			}
		}
	}
	return out
}
