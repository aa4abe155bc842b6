package authorizer

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// Parse derives a request's attributes from its method and URL as Kubernetes'
// RequestInfoFactory does; the caller adds the user. Paths under /api/<version> and
// /apis/<group>/<version> that name a resource are resource requests, with the verb
// get, list, watch, create, update, patch, delete or deletecollection; every other path is
// a non-resource request whose verb is the method in lower case. The error is for a path
// that starts with a verb and names nothing after it (/api/v1/watch); the attributes
// returned with it are as far as parsing got.
func Parse(r *http.Request) (Attributes, error) {
	a := Attributes{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
		return a, nil
	}
	grouped := parts[0] == "apis"
	parts = parts[1:]
	if grouped {
		// /apis/<group>/<version> alone is discovery, not a resource.
		if len(parts) < 3 {
			return a, nil
		}
		a.APIGroup, parts = parts[0], parts[1:]
	}
	a.ResourceRequest = true
	a.APIVersion, parts = parts[0], parts[1:]

	// The deprecated /watch/ and /proxy/ path segments carry the verb themselves.
	verbInPath := parts[0] == "watch" || parts[0] == "proxy"
	if verbInPath {
		if len(parts) < 2 {
			return a, fmt.Errorf("unable to determine kind and namespace from url, %v", r.URL)
		}
		a.Verb, parts = parts[0], parts[1:]
	} else {
		a.Verb = methodVerbs[r.Method]
	}

	if parts[0] == "namespaces" {
		if len(parts) > 1 {
			a.Namespace = parts[1]
			// namespaces/<ns>/status and /finalize are the namespace's own subresources;
			// anything else after the namespace is a resource in it.
			if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
				parts = parts[2:]
			}
		}
	}

	// parts: resource[/name[/subresource[/...]]]. A proxy request's path after the name is
	// where it goes, not a subresource.
	a.Resource = parts[0]
	if len(parts) >= 2 {
		a.Name = parts[1]
	}
	if len(parts) >= 3 && a.Verb != "proxy" {
		a.Subresource = parts[2]
	}

	if a.Name == "" && a.Verb == "get" {
		a.Verb, a.Name = listVerb(r)
	}
	if a.Name == "" && a.Verb == "delete" {
		a.Verb = "deletecollection"
	}

	// Selectors are only honoured for collections asked for the current way.
	if !verbInPath && (a.Verb == "list" || a.Verb == "watch" || a.Verb == "deletecollection") {
		if vals := r.URL.Query()["fieldSelector"]; len(vals) > 0 && vals[0] != "" {
			if sel, err := fields.ParseSelector(vals[0]); err == nil {
				if reqs := sel.Requirements(); len(reqs) > 0 {
					a.FieldSelector = reqs
				}
			}
		}
	}
	return a, nil
}

var methodVerbs = map[string]string{
	http.MethodPost:   "create",
	http.MethodGet:    "get",
	http.MethodHead:   "get",
	http.MethodPut:    "update",
	http.MethodPatch:  "patch",
	http.MethodDelete: "delete",
}

// listVerb tells a list from a watch of a collection by its list options. A fieldSelector
// metadata.name=<x> makes it a read of the one object x, so a rule limited to resourceNames
// can allow it.
func listVerb(r *http.Request) (verb, name string) {
	q := r.URL.Query()
	var opts metainternalversion.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err != nil {
		// Options that do not decode name nothing, but a watch is still a watch.
		opts = metainternalversion.ListOptions{}
		if vals := q["watch"]; len(vals) > 0 {
			v := strings.ToLower(vals[0])
			opts.Watch = v != "false" && v != "0"
		}
	}
	verb = "list"
	if opts.Watch {
		verb = "watch"
	}
	if opts.FieldSelector != nil {
		if n, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); ok && len(content.IsPathSegmentName(n)) == 0 {
			name = n
		}
	}
	return verb, name
}

func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}
