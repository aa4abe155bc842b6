package framework

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"minik8s.io/shared/scheme"
)

// Usage is what a node's kubelet last reported its pods use (scheme.AnnotationUsage*): a CPU
// rate in millicores and a memory working set in bytes, sampled at Time.
type Usage struct {
	MilliCPU int64
	Memory   int64
	Time     time.Time
}

// NodeUsage reads the usage annotations of node; ok is false when any of them is missing or
// unparsable, and then the node is judged by its requests alone.
func NodeUsage(node *corev1.Node) (u Usage, ok bool) {
	a := node.Annotations
	cpuStr, ok1 := a[scheme.AnnotationUsageCPU]
	memStr, ok2 := a[scheme.AnnotationUsageMemory]
	timeStr, ok3 := a[scheme.AnnotationUsageTime]
	if !ok1 || !ok2 || !ok3 {
		return Usage{}, false
	}
	cpu, err1 := resource.ParseQuantity(cpuStr)
	mem, err2 := resource.ParseQuantity(memStr)
	at, err3 := time.Parse(time.RFC3339, timeStr)
	if err1 != nil || err2 != nil || err3 != nil || cpu.Sign() < 0 || mem.Sign() < 0 {
		return Usage{}, false
	}
	return Usage{MilliCPU: cpu.MilliValue(), Memory: mem.Value(), Time: at}, true
}
