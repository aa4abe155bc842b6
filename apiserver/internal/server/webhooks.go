package server

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gin-gonic/gin"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/admission/webhook"
	"minik8s.io/apiserver/internal/authorizer"
	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

func init() {
	Registry.MustRegister(webhook.Collectors()...)
}

// webhookAttributes describes a write a client made for webhook admission; ok is false for
// the apiserver's own writes, which webhooks never see.
func webhookAttributes(ctx context.Context, op registry.Operation, k registry.Key, sub string, obj, old runtime.Object) (*webhook.Attributes, bool) {
	a, ok := authorizer.AttributesFrom(ctx)
	if !ok {
		return nil, false
	}
	served := k.Resource
	if k.Served != nil {
		served = k.Served
	}
	user := authenticationv1.UserInfo{Username: a.User.Name, UID: a.User.UID, Groups: a.User.Groups}
	if len(a.User.Extra) > 0 {
		user.Extra = map[string]authenticationv1.ExtraValue{}
		for key, v := range a.User.Extra {
			user.Extra[key] = v
		}
	}
	return &webhook.Attributes{
		Operation: admissionv1.Operation(op),
		Kind:      k.Resource.GVK, Resource: k.Resource.GVR(),
		RequestKind: served.GVK, RequestResource: served.GVR(),
		Subresource: sub, Namespaced: k.Resource.Namespaced, Namespace: k.Namespace, Name: k.Name,
		Object: obj, OldObject: old, DryRun: registry.DryRun(ctx), User: user,
	}, true
}

// mutateWebhooks runs the mutating webhooks on a client's write, changing obj in place.
func (s *Server) mutateWebhooks(ctx context.Context, op registry.Operation, k registry.Key, sub string, obj, old runtime.Object) error {
	a, ok := webhookAttributes(ctx, op, k, sub, obj, old)
	if !ok {
		return nil
	}
	return s.webhooks.Mutate(ctx, a)
}

// admitValidated is the registry's admission of a valid object: the validating webhooks.
func (s *Server) admitValidated(ctx context.Context, op registry.Operation, k registry.Key, sub string, obj, old runtime.Object) error {
	a, ok := webhookAttributes(ctx, op, k, sub, obj, old)
	if !ok {
		return nil
	}
	return s.webhooks.Validate(ctx, a)
}

// withWebhookWarnings passes the warnings webhooks answer with to the client as Warning
// headers, which go out before the body.
func withWebhookWarnings(ctx context.Context, c *gin.Context) context.Context {
	var mu sync.Mutex
	return webhook.WithWarnings(ctx, func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		c.Writer.Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
	})
}

// webhookSource reads what webhook admission needs straight from the registry.
type webhookSource struct{ s *Server }

func listAll[T runtime.Object](ctx context.Context, reg *registry.Registry, plural, namespace string, sel labels.Selector) ([]T, error) {
	res, err := scheme.Lookup(plural)
	if err != nil {
		return nil, err
	}
	opts := registry.ListOptions{}
	opts.Labels = sel
	list, err := reg.List(ctx, registry.Key{Resource: res, Namespace: namespace}, opts)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(list.Items))
	for _, obj := range list.Items {
		if t, ok := obj.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

func (w webhookSource) ValidatingWebhookConfigurations(ctx context.Context) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return listAll[*admissionregistrationv1.ValidatingWebhookConfiguration](ctx, w.s.reg, "validatingwebhookconfigurations", "", nil)
}

func (w webhookSource) MutatingWebhookConfigurations(ctx context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	return listAll[*admissionregistrationv1.MutatingWebhookConfiguration](ctx, w.s.reg, "mutatingwebhookconfigurations", "", nil)
}

func (w webhookSource) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return readAs[*corev1.Namespace](ctx, w.s.reg, "namespaces", "", name)
}

func (w webhookSource) Service(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	return readAs[*corev1.Service](ctx, w.s.reg, "services", namespace, name)
}

func (w webhookSource) Endpoints(ctx context.Context, namespace, name string) (*corev1.Endpoints, error) {
	ep, err := readAs[*corev1.Endpoints](ctx, w.s.reg, "endpoints", namespace, name)
	if errors.Is(err, apierror.ErrNotFound) {
		return nil, nil
	}
	return ep, err
}

func (w webhookSource) EndpointSlices(ctx context.Context, namespace, service string) ([]*discoveryv1.EndpointSlice, error) {
	return listAll[*discoveryv1.EndpointSlice](ctx, w.s.reg, "endpointslices", namespace,
		labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service}))
}
