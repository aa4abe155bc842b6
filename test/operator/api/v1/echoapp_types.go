package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Tiers an EchoApp can have; the mutating webhook sets TierFree when none is given.
const (
	TierFree = "free"
	TierPro  = "pro"
)

// ConditionAvailable is the condition type an EchoApp reports: True once every wanted replica
// of its Deployment is ready.
const ConditionAvailable = "Available"

// EchoApp runs minik8s/echo answering with a message: a Deployment of Replicas pods and a
// ClusterIP Service in front of them.
type EchoApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EchoAppSpec   `json:"spec"`
	Status EchoAppStatus `json:"status,omitzero"`
}

// EchoAppSpec is what the user asks for. The CRD's schema bounds each field (see the chart's
// crds/); the operator trusts those bounds.
type EchoAppSpec struct {
	// Replicas is the number of echo pods, 0 to 20; the schema defaults it to 1, so a
	// stored object always has it.
	Replicas *int32 `json:"replicas,omitempty"`
	// Message is what the pods answer with (the MESSAGE environment variable), at most 100
	// characters; the validating webhook refuses the word "forbidden".
	Message string `json:"message"`
	// Tier is free or pro; the mutating webhook sets free when it is empty.
	Tier string `json:"tier,omitempty"`
}

// EchoAppStatus is what the operator observed, written through the status subresource.
type EchoAppStatus struct {
	// Replicas is the number of pods the Deployment has (the scale subresource's status).
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of those that are ready.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Selector is the pods' label selector in its string form, for the scale subresource
	// (and so kubectl scale and a HorizontalPodAutoscaler).
	Selector string `json:"selector,omitempty"`
	// Conditions holds Available.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EchoAppList is a list of EchoApps.
type EchoAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EchoApp `json:"items"`
}

// DeepCopyInto copies in into out.
func (in *EchoApp) DeepCopyInto(out *EchoApp) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of in.
func (in *EchoApp) DeepCopy() *EchoApp {
	if in == nil {
		return nil
	}
	out := new(EchoApp)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *EchoApp) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies in into out.
func (in *EchoAppSpec) DeepCopyInto(out *EchoAppSpec) {
	*out = *in
	if in.Replicas != nil {
		r := *in.Replicas
		out.Replicas = &r
	}
}

// DeepCopyInto copies in into out.
func (in *EchoAppStatus) DeepCopyInto(out *EchoAppStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies in into out.
func (in *EchoAppList) DeepCopyInto(out *EchoAppList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]EchoApp, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of in.
func (in *EchoAppList) DeepCopy() *EchoAppList {
	if in == nil {
		return nil
	}
	out := new(EchoAppList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *EchoAppList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
