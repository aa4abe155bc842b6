package apierror

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A Status made on the server side maps back to the same sentinel on the client side.
func TestStatusRoundTrip(t *testing.T) {
	cases := []struct {
		err  error
		kind error
		code int32
	}{
		{NotFound("", "pods", "x"), ErrNotFound, http.StatusNotFound},
		{AlreadyExists("apps", "deployments", "d"), ErrAlreadyExists, http.StatusConflict},
		{Conflict("", "pods", "x", "stale"), ErrConflict, http.StatusConflict},
		{Invalid("", "Pod", "x", field.ErrorList{field.Required(field.NewPath("spec", "containers"), "")}), ErrInvalid, http.StatusUnprocessableEntity},
		{New(ErrGone, "too old"), ErrGone, http.StatusGone},
		{fmt.Errorf("wrapped: %w", New(ErrRequestTooLarge, "big")), ErrRequestTooLarge, http.StatusRequestEntityTooLarge},
		{errors.New("boom"), ErrInternal, http.StatusInternalServerError},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			st := ToStatus(tc.err)
			if st.Code != tc.code {
				t.Fatalf("code %d, want %d", st.Code, tc.code)
			}
			back := FromStatus(st)
			if !errors.Is(back, tc.kind) {
				t.Fatalf("FromStatus(%+v) is not %v", st, tc.kind)
			}
		})
	}
}

func TestInvalidNamesFields(t *testing.T) {
	e := Invalid("apps", "Deployment", "d", field.ErrorList{
		field.Invalid(field.NewPath("spec", "replicas"), -1, "must be greater than or equal to 0"),
	})
	if e.Status.Message != `Deployment.apps "d" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0` {
		t.Fatalf("message %q", e.Status.Message)
	}
	if e.Status.Reason != metav1.StatusReasonInvalid || e.Status.Details.Causes[0].Field != "spec.replicas" {
		t.Fatalf("status %+v", e.Status)
	}
}

// Forbidden is worded as Kubernetes' NewForbidden: with the object's name, without one, and
// outside any resource.
func TestForbiddenWording(t *testing.T) {
	cases := []struct {
		group, resource, name string
		want                  string
	}{
		{"", "pods", "p", `pods "p" is forbidden: because`},
		{"rbac.authorization.k8s.io", "roles", "", `roles.rbac.authorization.k8s.io is forbidden: because`},
		{"", "", "", `forbidden: because`},
	}
	for _, tc := range cases {
		e := Forbidden(tc.group, tc.resource, tc.name, "because")
		if e.Status.Message != tc.want || e.Status.Code != http.StatusForbidden || e.Status.Reason != metav1.StatusReasonForbidden {
			t.Errorf("Forbidden(%q, %q, %q) = %d %s %q, want 403 Forbidden %q", tc.group, tc.resource, tc.name, e.Status.Code, e.Status.Reason, e.Status.Message, tc.want)
		}
		if e.Status.Details.Kind != tc.resource || e.Status.Details.Name != tc.name {
			t.Errorf("details %+v", e.Status.Details)
		}
	}
}

// Every 404 carries details, empty when it names no object, as Kubernetes' do: kubectl debug
// reads Details.Name of a 404 without checking for nil.
func TestNotFoundCarriesDetails(t *testing.T) {
	cases := []struct {
		err  error
		want metav1.StatusDetails
	}{
		{New(ErrNotFound, "the server could not find the requested resource"), metav1.StatusDetails{}},
		{NotFound("apps", "deployments", "d"), metav1.StatusDetails{Group: "apps", Kind: "deployments", Name: "d"}},
		{fmt.Errorf("lookup: %w", ErrNotFound), metav1.StatusDetails{}},
	}
	for _, tc := range cases {
		st := ToStatus(tc.err)
		if st.Details == nil {
			t.Fatalf("%v: no details", tc.err)
		}
		if d := st.Details; d.Group != tc.want.Group || d.Kind != tc.want.Kind || d.Name != tc.want.Name {
			t.Fatalf("%v: details %+v, want %+v", tc.err, *st.Details, tc.want)
		}
	}
}
