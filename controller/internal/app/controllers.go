package app

import (
	"fmt"
	"slices"
	"strings"

	"minik8s.io/controller/internal/clusterroleaggregation"
	"minik8s.io/controller/internal/cronjob"
	"minik8s.io/controller/internal/daemonset"
	"minik8s.io/controller/internal/deployment"
	"minik8s.io/controller/internal/disruption"
	"minik8s.io/controller/internal/endpoints"
	"minik8s.io/controller/internal/endpointslice"
	"minik8s.io/controller/internal/garbagecollector"
	"minik8s.io/controller/internal/ingress"
	"minik8s.io/controller/internal/job"
	"minik8s.io/controller/internal/nodelifecycle"
	"minik8s.io/controller/internal/podautoscaler"
	"minik8s.io/controller/internal/replicaset"
	"minik8s.io/controller/internal/replication"
	"minik8s.io/controller/internal/resourcequota"
	"minik8s.io/controller/internal/rootcacert"
	"minik8s.io/controller/internal/statefulset"
	"minik8s.io/controller/internal/ttlafterfinished"
	"minik8s.io/controller/internal/volume"
	"minik8s.io/shared/run"
)

// controllers are the controllers this binary runs, by the names --controllers takes
// (Kubernetes' where it has them). Adding one is its package, whose Setup asks the informers
// for what it reads before returning, and one line here.
var controllers = []struct {
	name string
	new  func(ctx *Context) run.Runnable
}{
	{clusterroleaggregation.Name, clusterroleaggregation.Setup},
	{"daemonset", daemonset.Setup},
	{cronjob.Name, cronjob.Setup},
	{"deployment", deployment.Setup},
	{disruption.Name, disruption.Setup},
	{"endpoint", endpoints.Setup},
	{"endpointslice", endpointslice.Setup},
	{"garbagecollector", garbagecollector.Setup},
	{"horizontalpodautoscaling", podautoscaler.Setup},
	{"ingress", ingress.Setup},
	{"job", job.Setup},
	{"nodelifecycle", nodelifecycle.Setup},
	{"persistentvolume-binder", volume.Setup},
	{replicaset.Name, replicaset.Setup},
	{replication.Name, replication.Setup},
	{resourcequota.Name, resourcequota.Setup},
	{rootcacert.Name, rootcacert.Setup},
	{"statefulset", statefulset.Setup},
	{"ttl-after-finished", ttlafterfinished.Setup},
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
