package authorizer

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/apierror"
)

// htmlEscaper keeps a path or name a client chose from reading as markup where a 403's
// message is shown, as Kubernetes escapes it.
var htmlEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// ForbiddenMessage words a refused request as Kubernetes does, with the authorizers' reason
// after a colon when there is one:
//
//	User "u" cannot get resource "pods/log" in API group "" in the namespace "ns"
//	User "u" cannot create resource "namespaces" in API group "" at the cluster scope
//	User "u" cannot get path "/foo"
func ForbiddenMessage(a Attributes, reason string) string {
	msg := htmlEscaper.Replace(forbiddenMessage(a))
	if reason == "" {
		return msg
	}
	return msg + ": " + reason
}

func forbiddenMessage(a Attributes) string {
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", a.User.Name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", a.User.Name, a.Verb, resource, a.APIGroup)
}

// Forbidden is the 403 the apiserver answers a refused request with: Kubernetes'
// Forbidden Status for the request's resource and name, carrying ForbiddenMessage.
func Forbidden(a Attributes, reason string) *apierror.Error {
	gr := schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	return NewForbidden(gr, a.Name, fmt.Errorf("%s", ForbiddenMessage(a, reason)))
}

// NewForbidden is Kubernetes' Forbidden Status about an object (apierror.Forbidden) for an
// error of the authorizers' own.
func NewForbidden(gr schema.GroupResource, name string, err error) *apierror.Error {
	return apierror.Forbidden(gr.Group, gr.Resource, name, err.Error())
}
