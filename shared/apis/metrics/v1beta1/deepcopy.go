package v1beta1

import "k8s.io/apimachinery/pkg/runtime"

// DeepCopy returns a copy of m sharing nothing with it.
func (m *NodeMetrics) DeepCopy() *NodeMetrics {
	if m == nil {
		return nil
	}
	out := *m
	m.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	m.Timestamp.DeepCopyInto(&out.Timestamp)
	out.Usage = m.Usage.DeepCopy()
	return &out
}

// DeepCopyObject implements runtime.Object.
func (m *NodeMetrics) DeepCopyObject() runtime.Object { return m.DeepCopy() }

// DeepCopy returns a copy of l sharing nothing with it.
func (l *NodeMetricsList) DeepCopy() *NodeMetricsList {
	if l == nil {
		return nil
	}
	out := *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]NodeMetrics, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopy()
		}
	}
	return &out
}

// DeepCopyObject implements runtime.Object.
func (l *NodeMetricsList) DeepCopyObject() runtime.Object { return l.DeepCopy() }

// DeepCopy returns a copy of m sharing nothing with it.
func (m *PodMetrics) DeepCopy() *PodMetrics {
	if m == nil {
		return nil
	}
	out := *m
	m.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	m.Timestamp.DeepCopyInto(&out.Timestamp)
	if m.Containers != nil {
		out.Containers = make([]ContainerMetrics, len(m.Containers))
		for i, c := range m.Containers {
			out.Containers[i] = ContainerMetrics{Name: c.Name, Usage: c.Usage.DeepCopy()}
		}
	}
	return &out
}

// DeepCopyObject implements runtime.Object.
func (m *PodMetrics) DeepCopyObject() runtime.Object { return m.DeepCopy() }

// DeepCopy returns a copy of l sharing nothing with it.
func (l *PodMetricsList) DeepCopy() *PodMetricsList {
	if l == nil {
		return nil
	}
	out := *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]PodMetrics, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopy()
		}
	}
	return &out
}

// DeepCopyObject implements runtime.Object.
func (l *PodMetricsList) DeepCopyObject() runtime.Object { return l.DeepCopy() }
