package scheme

// Annotations the kubelet keeps on its Node with what the node's pods use right now, so the
// scheduler's leastcpu and leastmemory strategies can see load that requests do not declare.
// The kubelet writes all three together with a merge patch; a reader that finds one missing
// or unparsable ignores the others.
const (
	// AnnotationUsageCPU is the pods' CPU rate as a quantity in millicores ("250m").
	AnnotationUsageCPU = "minik8s.io/usage-cpu"
	// AnnotationUsageMemory is the pods' summed memory working set as a quantity in bytes.
	AnnotationUsageMemory = "minik8s.io/usage-memory"
	// AnnotationUsageTime is when the usage was sampled, RFC 3339 in UTC.
	AnnotationUsageTime = "minik8s.io/usage-time"
)
