package webhook

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Attributes are one write as webhooks are told about it.
type Attributes struct {
	Operation admissionv1.Operation
	// Kind and Resource are the object's as it is stored; RequestKind and RequestResource
	// what the request named, when it came through another served version of the kind (an
	// autoscaling/v1 HorizontalPodAutoscaler), else the same.
	Kind            schema.GroupVersionKind
	Resource        schema.GroupVersionResource
	RequestKind     schema.GroupVersionKind
	RequestResource schema.GroupVersionResource
	Subresource     string
	// Namespaced is whether the resource is; Namespace is "" for cluster-scoped objects.
	Namespaced bool
	Namespace  string
	Name       string
	// Object is the new object (nil for a delete), OldObject the stored one (nil for a
	// create). Mutating webhooks change Object in place.
	Object    runtime.Object
	OldObject runtime.Object
	DryRun    bool
	User      authenticationv1.UserInfo
}

// Source is what webhook admission reads from the cluster.
type Source interface {
	ValidatingWebhookConfigurations(ctx context.Context) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error)
	MutatingWebhookConfigurations(ctx context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, error)
	// Namespace is the namespace named name, for namespaceSelectors.
	Namespace(ctx context.Context, name string) (*corev1.Namespace, error)
	// Service, Endpoints and EndpointSlices find the pods behind a webhook's Service; a
	// Service without Endpoints answers a nil Endpoints and no error.
	Service(ctx context.Context, namespace, name string) (*corev1.Service, error)
	Endpoints(ctx context.Context, namespace, name string) (*corev1.Endpoints, error)
	EndpointSlices(ctx context.Context, namespace, service string) ([]*discoveryv1.EndpointSlice, error)
}

type warningsKey struct{}

// WithWarnings makes ctx carry add, which receives the warnings webhooks answer with: the
// apiserver passes them to the client as Warning headers. add may be called concurrently.
func WithWarnings(ctx context.Context, add func(msg string)) context.Context {
	return context.WithValue(ctx, warningsKey{}, add)
}

func warn(ctx context.Context, msg string) {
	if add, ok := ctx.Value(warningsKey{}).(func(string)); ok {
		add(msg)
	}
}
