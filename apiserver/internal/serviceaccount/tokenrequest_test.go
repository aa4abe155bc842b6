package serviceaccount

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
)

var (
	saClaim = map[string]any{"name": "robot", "uid": "sa-uid"}
	apiAuds = []any{DefaultIssuer}
)

func TestTokenRequest(t *testing.T) {
	now := t0.Add(500 * time.Millisecond) // sub-second: the token keeps whole seconds
	iat := float64(t0.Unix())
	tests := []struct {
		name       string
		req        authnv1.TokenRequest
		wantSpec   authnv1.TokenRequestSpec
		wantExp    time.Duration
		wantClaims map[string]any // aud, exp and kubernetes.io of the token
	}{
		{
			name:       "defaults",
			wantSpec:   authnv1.TokenRequestSpec{Audiences: []string{DefaultIssuer}, ExpirationSeconds: seconds(3600)},
			wantExp:    time.Hour,
			wantClaims: map[string]any{"aud": apiAuds, "exp": iat + 3600, "kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": saClaim}},
		},
		{
			name: "duration, audiences and matching metadata",
			req: authnv1.TokenRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "ns1", UID: "sa-uid"},
				Spec:       authnv1.TokenRequestSpec{Audiences: []string{"vault", "minio"}, ExpirationSeconds: seconds(600)},
			},
			wantSpec:   authnv1.TokenRequestSpec{Audiences: []string{"vault", "minio"}, ExpirationSeconds: seconds(600)},
			wantExp:    10 * time.Minute,
			wantClaims: map[string]any{"aud": []any{"vault", "minio"}, "exp": iat + 600, "kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": saClaim}},
		},
		{
			name: "bound to a scheduled pod, with its uid",
			req: authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: "pod-uid"},
			}},
			wantSpec: authnv1.TokenRequestSpec{Audiences: []string{DefaultIssuer}, ExpirationSeconds: seconds(3600),
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: "pod-uid"}},
			wantExp: time.Hour,
			wantClaims: map[string]any{"aud": apiAuds, "exp": iat + 3600, "kubernetes.io": map[string]any{
				"namespace": "ns1", "serviceaccount": saClaim,
				"pod":  map[string]any{"name": "web", "uid": "pod-uid"},
				"node": map[string]any{"name": "n1", "uid": "node-uid"},
			}},
		},
		{
			name: "bound to a pending pod",
			req: authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "pending"},
			}},
			wantSpec: authnv1.TokenRequestSpec{Audiences: []string{DefaultIssuer}, ExpirationSeconds: seconds(3600),
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "pending"}},
			wantExp: time.Hour,
			wantClaims: map[string]any{"aud": apiAuds, "exp": iat + 3600, "kubernetes.io": map[string]any{
				"namespace": "ns1", "serviceaccount": saClaim,
				"pod": map[string]any{"name": "pending", "uid": "pending-uid"},
			}},
		},
		{
			name: "bound to a pod whose node is gone",
			req: authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "orphaned"},
			}},
			wantSpec: authnv1.TokenRequestSpec{Audiences: []string{DefaultIssuer}, ExpirationSeconds: seconds(3600),
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "orphaned"}},
			wantExp: time.Hour,
			wantClaims: map[string]any{"aud": apiAuds, "exp": iat + 3600, "kubernetes.io": map[string]any{
				"namespace": "ns1", "serviceaccount": saClaim,
				"pod":  map[string]any{"name": "orphaned", "uid": "orphaned-uid"},
				"node": map[string]any{"name": "gone"},
			}},
		},
		{
			name: "bound to a secret",
			req: authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "creds", UID: "secret-uid"},
			}},
			wantSpec: authnv1.TokenRequestSpec{Audiences: []string{DefaultIssuer}, ExpirationSeconds: seconds(3600),
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "creds", UID: "secret-uid"}},
			wantExp: time.Hour,
			wantClaims: map[string]any{"aud": apiAuds, "exp": iat + 3600, "kubernetes.io": map[string]any{
				"namespace": "ns1", "serviceaccount": saClaim,
				"secret": map[string]any{"name": "creds", "uid": "secret-uid"},
			}},
		},
		{
			name: "bound to a node",
			req: authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n1"},
			}},
			wantSpec: authnv1.TokenRequestSpec{Audiences: []string{DefaultIssuer}, ExpirationSeconds: seconds(3600),
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n1"}},
			wantExp: time.Hour,
			wantClaims: map[string]any{"aud": apiAuds, "exp": iat + 3600, "kubernetes.io": map[string]any{
				"namespace": "ns1", "serviceaccount": saClaim,
				"node": map[string]any{"name": "n1", "uid": "node-uid"},
			}},
		},
	}
	key := readKey(t, "sa.key")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := cluster()
			s := newSigner(t, DefaultIssuer, key)
			in := tt.req.DeepCopy()
			got, err := s.TokenRequest(t.Context(), objs, []string{DefaultIssuer}, "ns1", "robot", &tt.req, now)
			if err != nil {
				t.Fatalf("TokenRequest: %v", err)
			}
			if diff := cmp.Diff(in, &tt.req); diff != "" {
				t.Errorf("the request was modified (-before +after):\n%s", diff)
			}
			want := &authnv1.TokenRequest{
				TypeMeta:   metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"},
				ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "ns1", UID: "sa-uid", CreationTimestamp: metav1.NewTime(now)},
				Spec:       tt.wantSpec,
				Status:     authnv1.TokenRequestStatus{Token: got.Status.Token, ExpirationTimestamp: metav1.NewTime(now.Add(tt.wantExp))},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("TokenRequest (-want +got):\n%s", diff)
			}
			payload := decodeSegment(t, got.Status.Token, 1)
			claims := map[string]any{"aud": payload["aud"], "exp": payload["exp"], "kubernetes.io": payload["kubernetes.io"]}
			if diff := cmp.Diff(tt.wantClaims, claims); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
			v := newValidator(t, objs, now, &key.PublicKey)
			resp, ok, err := v.Authenticate(t.Context(), got.Status.Token, got.Spec.Audiences)
			if !ok || err != nil || resp.User.Name != "system:serviceaccount:ns1:robot" {
				t.Errorf("issued token does not authenticate: %+v, %v, %v", resp, ok, err)
			}
		})
	}
}

func TestTokenRequestErrors(t *testing.T) {
	ref := func(apiVersion, kind, name, uid string) authnv1.TokenRequest {
		return authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: &authnv1.BoundObjectReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: k8stypes.UID(uid)}}}
	}
	tests := []struct {
		name    string
		url     string // the ServiceAccount named in the path; robot when empty
		req     authnv1.TokenRequest
		nodeErr error
		want    metav1.Status // Code, Reason, Message and Details.Causes compared
	}{
		{
			name: "name differs from the URL",
			req:  authnv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
			want: invalid(`TokenRequest.authentication.k8s.io "robot" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified`,
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "metadata.name", Message: `Invalid value: "other": must match the service account name if specified`}),
		},
		{
			name: "namespace differs from the URL",
			req:  authnv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns2"}},
			want: invalid(`TokenRequest.authentication.k8s.io "robot" is invalid: metadata.namespace: Invalid value: "ns2": must match the service account namespace if specified`,
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "metadata.namespace", Message: `Invalid value: "ns2": must match the service account namespace if specified`}),
		},
		{
			name: "no such ServiceAccount",
			url:  "ghost",
			want: metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound, Message: `serviceaccounts "ghost" not found`},
		},
		{
			name: "uid of another ServiceAccount",
			req:  authnv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: "old-uid"}},
			want: metav1.Status{Code: 409, Reason: metav1.StatusReasonConflict,
				Message: `Operation cannot be fulfilled on TokenRequest.authentication.k8s.io "robot": the UID in the token request (old-uid) does not match the UID of the service account (sa-uid)`},
		},
		{
			name: "shorter than 10 minutes",
			req:  authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: seconds(599)}},
			want: invalid(`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`,
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "spec.expirationSeconds", Message: "Invalid value: 599: may not specify a duration less than 10 minutes"}),
		},
		{
			name: "longer than 2^32 seconds",
			req:  authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: seconds(1<<32 + 1)}},
			want: invalid(`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds`,
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "spec.expirationSeconds", Message: "Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"}),
		},
		{
			name: "attestations without a webhook",
			req: authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: seconds(1),
				Attestations: map[string]authnv1.AttestationValue{"admissionReviewAPIGroups": {"apps"}}}},
			want: invalid(`TokenRequest.authentication.k8s.io "" is invalid: spec.attestations: Invalid value: {"admissionReviewAPIGroups":["apps"]}: attestations may only be specified with a webhook bound object reference`,
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "spec.attestations", Message: `Invalid value: {"admissionReviewAPIGroups":["apps"]}: attestations may only be specified with a webhook bound object reference`}),
		},
		{
			name: "bound to a ConfigMap",
			req:  ref("v1", "ConfigMap", "cfg", ""),
			want: badRequest("cannot bind token to object of type /v1, Kind=ConfigMap"),
		},
		{
			name: "bound to a Pod of another group",
			req:  ref("apps/v1", "Pod", "web", ""),
			want: badRequest("cannot bind token to object of type apps/v1, Kind=Pod"),
		},
		{
			name: "bound to a webhook configuration",
			req:  ref("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "hook", ""),
			want: badRequest("cannot bind token to object of type admissionregistration.k8s.io/v1, Kind=ValidatingWebhookConfiguration"),
		},
		{
			name: "bound object without a name",
			req:  ref("v1", "Pod", "", ""),
			want: badRequest("Name parameter required."),
		},
		{
			name: "no such pod",
			req:  ref("v1", "Pod", "nope", ""),
			want: metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound, Message: `pods "nope" not found`},
		},
		{
			name: "pod of another ServiceAccount",
			req:  ref("v1", "Pod", "db", ""),
			want: badRequest(`cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.`),
		},
		{
			name: "pod recreated since its uid was read",
			req:  ref("v1", "Pod", "web", "old-pod-uid"),
			want: metav1.Status{Code: 409, Reason: metav1.StatusReasonConflict,
				Message: `Operation cannot be fulfilled on Pod "web": the UID in the bound object reference (old-pod-uid) does not match the UID in record. The object might have been deleted and then recreated`},
		},
		{
			name: "secret recreated since its uid was read",
			req:  ref("v1", "Secret", "creds", "old-secret-uid"),
			want: metav1.Status{Code: 409, Reason: metav1.StatusReasonConflict,
				Message: `Operation cannot be fulfilled on Secret "creds": the UID in the bound object reference (old-secret-uid) does not match the UID in record. The object might have been deleted and then recreated`},
		},
		{
			name: "no such secret",
			req:  ref("v1", "Secret", "nope", ""),
			want: metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound, Message: `secrets "nope" not found`},
		},
		{
			name: "no such node",
			req:  ref("v1", "Node", "nope", ""),
			want: metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound, Message: `nodes "nope" not found`},
		},
		{
			name:    "the pod's node cannot be read",
			req:     ref("v1", "Pod", "web", ""),
			nodeErr: errors.New("etcd unavailable"),
			want:    metav1.Status{Code: 500, Reason: metav1.StatusReasonInternalError, Message: "get node n1: etcd unavailable"},
		},
	}
	s := newSigner(t, DefaultIssuer, readKey(t, "sa.key"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := cluster()
			objs.nodeErr = tt.nodeErr
			name := tt.url
			if name == "" {
				name = "robot"
			}
			got, err := s.TokenRequest(t.Context(), objs, []string{DefaultIssuer}, "ns1", name, &tt.req, t0)
			if err == nil {
				t.Fatalf("TokenRequest = %+v, want an error", got)
			}
			var apiErr *apierror.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %T %v is not an *apierror.Error", err, err)
			}
			st := apierror.ToStatus(err)
			gotStatus := metav1.Status{Code: st.Code, Reason: st.Reason, Message: st.Message}
			if tt.want.Details != nil && st.Details != nil {
				gotStatus.Details = &metav1.StatusDetails{Causes: st.Details.Causes}
			}
			if diff := cmp.Diff(tt.want, gotStatus); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func invalid(msg string, causes ...metav1.StatusCause) metav1.Status {
	return metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid, Message: msg, Details: &metav1.StatusDetails{Causes: causes}}
}

func badRequest(msg string) metav1.Status {
	return metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest, Message: msg}
}

func seconds(n int64) *int64 { return &n }
