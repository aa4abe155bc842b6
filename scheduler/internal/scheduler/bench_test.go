package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/scheduler/internal/cache"
	"minik8s.io/scheduler/internal/framework"
	"minik8s.io/scheduler/internal/queue"
	"minik8s.io/shared/record"
	"minik8s.io/shared/scheme"
	"minik8s.io/shared/workqueue/clock"
)

// nopAPI accepts every binding at once: the benchmark measures the decision, not the store.
type nopAPI struct{}

func (nopAPI) Bind(context.Context, *corev1.Pod, string) error { return nil }
func (nopAPI) UpdatePodStatus(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	return p, nil
}

type mapLister map[string]*corev1.Pod

func (m mapLister) Get(ns, name string) (*corev1.Pod, error) { return m[ns+"/"+name], nil }

// BenchmarkScheduleOne is the loop's cost per pod (filter, score, assume) with the cache of
// a cluster of the given size, each node already running pods: the CPU side of the
// scheduling benchmark's pods/s, without the store.
func BenchmarkScheduleOne(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		for _, strategy := range []string{framework.StrategyBalanced, framework.StrategyRoundRobin, framework.StrategyLeastCPU} {
			b.Run(fmt.Sprintf("nodes=%d/%s", nodes, strategy), func(b *testing.B) {
				benchSchedule(b, nodes, strategy)
			})
		}
	}
}

func benchSchedule(b *testing.B, nodes int, strategyName string) {
	clk := clock.NewFake(time.Unix(1000, 0))
	c := cache.New(clk, time.Hour)
	q := queue.New(clk, 0, 0, nil)
	b.Cleanup(q.ShutDown)
	strategy, err := framework.NewStrategy(strategyName, nil)
	if err != nil {
		b.Fatal(err)
	}
	pods := mapLister{}
	s := New(Config{API: nopAPI{}, Pods: pods, Cache: c, Queue: q, Strategy: strategy,
		Recorder: record.NewFake(1), Clock: clk})
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	newPod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("u-" + name)},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}}}}
	}
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		// Every node reports usage, as kubelets do: judging those reports must not cost
		// a walk over all nodes per pod.
		c.SetNode(mkNode(name, "110", func(n *corev1.Node) {
			n.Annotations = map[string]string{scheme.AnnotationUsageCPU: fmt.Sprintf("%dm", i%700),
				scheme.AnnotationUsageMemory: "200Mi", scheme.AnnotationUsageTime: clk.Now().UTC().Format(time.RFC3339)}
		}))
		for j := range 2 {
			c.SetPod(newPod(fmt.Sprintf("running-%d-%d", i, j), name))
		}
	}
	keys := make([]string, b.N)
	for i := range b.N {
		p := newPod(fmt.Sprintf("p-%d", i), "")
		pods["default/"+p.Name] = p
		keys[i] = "default/" + p.Name
	}
	// As in a running cluster, a binding is seen on the bus a while after the decision
	// (confirmLag pods later, about a second at a thousand pods a second), and pods go away
	// again so the nodes never fill up however large b.N grows.
	confirmLag, removeLag := 1000, nodes*50
	bound := make([]*corev1.Pod, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j, ok := s.process(b.Context(), keys[i])
		if !ok {
			b.Fatalf("pod %d not scheduled", i)
		}
		p := *j.pod
		p.Spec.NodeName = j.node
		bound[i] = &p
		if k := i - confirmLag; k >= 0 {
			c.SetPod(bound[k])
		}
		if k := i - removeLag; k >= 0 {
			c.RemovePod("default", bound[k].Name)
			bound[k] = nil
		}
	}
}
