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
