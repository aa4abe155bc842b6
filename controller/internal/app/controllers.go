package app

import (
	"fmt"
	"slices"
	"strings"

	"minik8s.io/shared/run"
)

// controllers are the controllers this binary runs, by the names --controllers takes
// (Kubernetes' where it has them). Adding one is one line here and its constructor below; it
// must ask the informers for what it reads before returning.
var controllers = []struct {
	name string
	new  func(ctx *Context) run.Runnable
}{
	{"deployment", newDeployments},
	{"endpoint", newEndpoints},
	{"endpointslice", newEndpointSlices},
	{"garbagecollector", newGarbageCollector},
	{"horizontalpodautoscaling", newHPAs},
	{"ingress", newIngress},
	{"job", newJobs},
	{"nodelifecycle", newNodeLifecycle},
	{"persistentvolume-binder", newVolumeBinder},
	{"replicaset", newReplicaSets},
	{"ttl-after-finished", newTTLAfterFinished},
}

// ControllerNames are the names --controllers knows.
func ControllerNames() []string {
	var names []string
	for _, c := range controllers {
		names = append(names, c.name)
	}
	return names
}

// enabled applies --controllers as Kubernetes reads it: "*" is every controller, "name"
// enables one, "-name" disables one; an empty list means "*".
func enabled(list []string, name string) bool {
	if len(list) == 0 {
		return true
	}
	if slices.Contains(list, "-"+name) {
		return false
	}
	return slices.Contains(list, name) || slices.Contains(list, "*")
}

// validateControllers refuses names no controller has.
func validateControllers(list []string) error {
	known := ControllerNames()
	for _, n := range list {
		if n == "*" {
			continue
		}
		if !slices.Contains(known, strings.TrimPrefix(n, "-")) {
			return fmt.Errorf("--controllers: unknown controller %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return nil
}
