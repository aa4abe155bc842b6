package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/shared/apierror"
)

// Bounds of spec.expirationSeconds, as Kubernetes sets them.
const (
	DefaultExpirationSeconds = 60 * 60
	MinExpirationSeconds     = 10 * 60
	MaxExpirationSeconds     = 1 << 32
)

const tokenRequestKind = "TokenRequest"

// TokenRequest answers POST /api/v1/namespaces/<namespace>/serviceaccounts/<name>/token as
// Kubernetes does: it checks and defaults req, looks up the ServiceAccount and the bound
// object through objects, and returns a copy of req with status.token and
// status.expirationTimestamp filled in. Its errors are *apierror.Error, whose Status the
// caller writes as it is:
//   - 422 Invalid with field paths: metadata.name or metadata.namespace differing from the
//     URL, spec.expirationSeconds out of [10 minutes, 2^32 seconds], spec.attestations given;
//   - 400 BadRequest: a boundObjectRef of a kind other than v1 Pod, Secret or Node, without a
//     name, or a Pod running as another ServiceAccount;
//   - 409 Conflict: metadata.uid or boundObjectRef.uid not matching the object in record;
//   - objects' own errors, e.g. 404 when the ServiceAccount or bound object is missing;
//   - 500 when a node lookup or signing fails.
func (s *Signer) TokenRequest(ctx context.Context, objects Getter, apiAudiences []string, namespace, name string, req *authnv1.TokenRequest, now time.Time) (*authnv1.TokenRequest, error) {
	if req.Name != "" && req.Name != name {
		return nil, apierror.Invalid(authnv1.GroupName, tokenRequestKind, name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified"),
		})
	}
	if req.Namespace != "" && req.Namespace != namespace {
		return nil, apierror.Invalid(authnv1.GroupName, tokenRequestKind, name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified"),
		})
	}
	sa, err := objects.GetServiceAccount(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if req.UID != "" && req.UID != sa.UID {
		return nil, apierror.Conflict(authnv1.GroupName, tokenRequestKind, name,
			fmt.Sprintf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}

	out := req.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{Kind: tokenRequestKind, APIVersion: authnv1.SchemeGroupVersion.String()}
	if len(out.Spec.Audiences) == 0 {
		out.Spec.Audiences = slices.Clone(apiAudiences)
	}
	if out.Spec.ExpirationSeconds == nil {
		exp := int64(DefaultExpirationSeconds)
		out.Spec.ExpirationSeconds = &exp
	}
	out.Name, out.Namespace, out.UID = sa.Name, sa.Namespace, sa.UID
	out.CreationTimestamp = metav1.NewTime(now)
	out.Status = authnv1.TokenRequestStatus{}
	if errs := validateTokenRequest(out); len(errs) > 0 {
		return nil, apierror.Invalid(authnv1.GroupName, tokenRequestKind, "", errs)
	}

	bound, err := lookupBound(ctx, objects, namespace, name, out.Spec.BoundObjectRef)
	if err != nil {
		return nil, err
	}
	lifetime := time.Duration(*out.Spec.ExpirationSeconds) * time.Second
	claims, err := NewClaims(sa, bound, out.Spec.Audiences, lifetime, now)
	if err != nil {
		return nil, apierror.New(apierror.ErrInternal, "%v", err)
	}
	token, err := s.Issue(*claims)
	if err != nil {
		return nil, apierror.New(apierror.ErrInternal, "failed to generate token: %v", err)
	}
	out.Status = authnv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(now.Add(lifetime))}
	return out, nil
}

func validateTokenRequest(tr *authnv1.TokenRequest) field.ErrorList {
	spec := field.NewPath("spec")
	// Only webhook-bound tokens take attestations, and those are not served: they fall to
	// the unsupported kind below.
	if len(tr.Spec.Attestations) > 0 && !isWebhookRef(tr.Spec.BoundObjectRef) {
		return field.ErrorList{field.Invalid(spec.Child("attestations"), tr.Spec.Attestations, "attestations may only be specified with a webhook bound object reference")}
	}
	var errs field.ErrorList
	exp := *tr.Spec.ExpirationSeconds
	if exp < MinExpirationSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
	}
	if exp > MaxExpirationSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
	}
	return errs
}

func isWebhookRef(ref *authnv1.BoundObjectReference) bool {
	if ref == nil || ref.APIVersion != "admissionregistration.k8s.io/v1" {
		return false
	}
	return ref.Kind == "ValidatingWebhookConfiguration" || ref.Kind == "MutatingWebhookConfiguration"
}

// lookupBound finds the object a token is to be bound to and checks it may be.
func lookupBound(ctx context.Context, objects Getter, namespace, saName string, ref *authnv1.BoundObjectReference) (Bound, error) {
	var bound Bound
	if ref == nil {
		return bound, nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	if gvk.Group != "" || (gvk.Kind != "Pod" && gvk.Kind != "Node" && gvk.Kind != "Secret") {
		return bound, apierror.New(apierror.ErrBadRequest, "cannot bind token to object of type %s", gvk.String())
	}
	if ref.Name == "" {
		// What the registry answers a get without a name.
		return bound, apierror.New(apierror.ErrBadRequest, "Name parameter required.")
	}
	var uid string
	switch gvk.Kind {
	case "Pod":
		pod, err := objects.GetPod(ctx, namespace, ref.Name)
		if err != nil {
			return bound, err
		}
		if pod.Spec.ServiceAccountName != saName {
			return bound, apierror.New(apierror.ErrBadRequest, "cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", saName)
		}
		bound.Pod, uid = pod, string(pod.UID)
		if node := pod.Spec.NodeName; node != "" {
			n, err := objects.GetNode(ctx, node)
			switch {
			case errors.Is(err, apierror.ErrNotFound):
				// The token still says where the pod runs, without the uid it cannot know.
				bound.Node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
			case err != nil:
				return bound, apierror.New(apierror.ErrInternal, "get node %s: %v", node, err)
			default:
				bound.Node = n
			}
		}
	case "Node":
		node, err := objects.GetNode(ctx, ref.Name)
		if err != nil {
			return bound, err
		}
		bound.Node, uid = node, string(node.UID)
	case "Secret":
		secret, err := objects.GetSecret(ctx, namespace, ref.Name)
		if err != nil {
			return bound, err
		}
		bound.Secret, uid = secret, string(secret.UID)
	}
	if ref.UID != "" && string(ref.UID) != uid {
		return bound, apierror.Conflict(gvk.Group, gvk.Kind, ref.Name,
			fmt.Sprintf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return bound, nil
}
