package authorizer

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"
)

// The cases follow Kubernetes' RequestInfoFactory tests: what each URL and method is
// authorized as.
func TestParse(t *testing.T) {
	cases := []struct {
		method, url string
		want        Attributes
	}{
		// Collections and objects, cluster-scoped and namespaced.
		{"GET", "/api/v1/namespaces", Attributes{Verb: "list", ResourceRequest: true, Path: "/api/v1/namespaces", APIVersion: "v1", Resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/other", Attributes{Verb: "get", ResourceRequest: true, Path: "/api/v1/namespaces/other", APIVersion: "v1", Namespace: "other", Resource: "namespaces", Name: "other"}},
		{"GET", "/api/v1/namespaces/other/pods", Attributes{Verb: "list", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/other/pods/foo", Attributes{Verb: "get", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods/foo", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"HEAD", "/api/v1/namespaces/other/pods/foo", Attributes{Verb: "get", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods/foo", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"GET", "/api/v1/pods", Attributes{Verb: "list", ResourceRequest: true, Path: "/api/v1/pods", APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/nodes/n1", Attributes{Verb: "get", ResourceRequest: true, Path: "/api/v1/nodes/n1", APIVersion: "v1", Resource: "nodes", Name: "n1"}},
		{"POST", "/api/v1/namespaces", Attributes{Verb: "create", ResourceRequest: true, Path: "/api/v1/namespaces", APIVersion: "v1", Resource: "namespaces"}},
		{"POST", "/api/v1/namespaces/other/pods", Attributes{Verb: "create", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		{"PUT", "/api/v1/namespaces/other/pods/foo", Attributes{Verb: "update", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods/foo", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"PATCH", "/api/v1/namespaces/other/pods/foo", Attributes{Verb: "patch", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods/foo", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"DELETE", "/api/v1/namespaces/other/pods/foo", Attributes{Verb: "delete", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods/foo", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"DELETE", "/api/v1/namespaces/other/pods", Attributes{Verb: "deletecollection", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		{"OPTIONS", "/api/v1/namespaces/other/pods", Attributes{Verb: "", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		// Groups.
		{"GET", "/apis/apps/v1/namespaces/other/deployments/d", Attributes{Verb: "get", ResourceRequest: true, Path: "/apis/apps/v1/namespaces/other/deployments/d", APIGroup: "apps", APIVersion: "v1", Namespace: "other", Resource: "deployments", Name: "d"}},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", Attributes{Verb: "list", ResourceRequest: true, Path: "/apis/rbac.authorization.k8s.io/v1/clusterroles", APIGroup: "rbac.authorization.k8s.io", APIVersion: "v1", Resource: "clusterroles"}},
		// Subresources.
		{"GET", "/api/v1/namespaces/other/pods/foo/log", Attributes{Verb: "get", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods/foo/log", APIVersion: "v1", Namespace: "other", Resource: "pods", Subresource: "log", Name: "foo"}},
		{"POST", "/api/v1/namespaces/other/pods/foo/exec", Attributes{Verb: "create", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods/foo/exec", APIVersion: "v1", Namespace: "other", Resource: "pods", Subresource: "exec", Name: "foo"}},
		{"PUT", "/apis/apps/v1/namespaces/other/deployments/d/scale", Attributes{Verb: "update", ResourceRequest: true, Path: "/apis/apps/v1/namespaces/other/deployments/d/scale", APIGroup: "apps", APIVersion: "v1", Namespace: "other", Resource: "deployments", Subresource: "scale", Name: "d"}},
		{"POST", "/apis/serverless.minik8s.io/v1/namespaces/ns/functions/f/invoke", Attributes{Verb: "create", ResourceRequest: true, Path: "/apis/serverless.minik8s.io/v1/namespaces/ns/functions/f/invoke", APIGroup: "serverless.minik8s.io", APIVersion: "v1", Namespace: "ns", Resource: "functions", Subresource: "invoke", Name: "f"}},
		{"POST", "/api/v1/namespaces/ns/serviceaccounts/default/token", Attributes{Verb: "create", ResourceRequest: true, Path: "/api/v1/namespaces/ns/serviceaccounts/default/token", APIVersion: "v1", Namespace: "ns", Resource: "serviceaccounts", Subresource: "token", Name: "default"}},
		{"PUT", "/api/v1/namespaces/other/status", Attributes{Verb: "update", ResourceRequest: true, Path: "/api/v1/namespaces/other/status", APIVersion: "v1", Namespace: "other", Resource: "namespaces", Subresource: "status", Name: "other"}},
		{"PUT", "/api/v1/namespaces/other/finalize", Attributes{Verb: "update", ResourceRequest: true, Path: "/api/v1/namespaces/other/finalize", APIVersion: "v1", Namespace: "other", Resource: "namespaces", Subresource: "finalize", Name: "other"}},
		{"PUT", "/api/v1/nodes/n1/status", Attributes{Verb: "update", ResourceRequest: true, Path: "/api/v1/nodes/n1/status", APIVersion: "v1", Resource: "nodes", Subresource: "status", Name: "n1"}},
		// Watches, by query and by the deprecated path segment.
		{"GET", "/api/v1/namespaces/other/pods?watch=true", Attributes{Verb: "watch", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/other/pods?watch=1", Attributes{Verb: "watch", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/other/pods?watch=false", Attributes{Verb: "list", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/other/pods?watch=0", Attributes{Verb: "list", ResourceRequest: true, Path: "/api/v1/namespaces/other/pods", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		{"GET", "/api/v1/watch/namespaces/other/pods", Attributes{Verb: "watch", ResourceRequest: true, Path: "/api/v1/watch/namespaces/other/pods", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		{"GET", "/api/v1/watch/namespaces/other/pods/foo", Attributes{Verb: "watch", ResourceRequest: true, Path: "/api/v1/watch/namespaces/other/pods/foo", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"GET", "/apis/apps/v1/watch/deployments", Attributes{Verb: "watch", ResourceRequest: true, Path: "/apis/apps/v1/watch/deployments", APIGroup: "apps", APIVersion: "v1", Resource: "deployments"}},
		{"GET", "/api/v1/proxy/namespaces/other/pods/foo/a/b", Attributes{Verb: "proxy", ResourceRequest: true, Path: "/api/v1/proxy/namespaces/other/pods/foo/a/b", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		// A metadata.name field selector names the object read.
		{"GET", "/api/v1/namespaces/other/secrets?fieldSelector=metadata.name%3Dfoo", Attributes{Verb: "list", ResourceRequest: true, Path: "/api/v1/namespaces/other/secrets", APIVersion: "v1", Namespace: "other", Resource: "secrets", Name: "foo",
			FieldSelector: fields.Requirements{{Operator: selection.Equals, Field: "metadata.name", Value: "foo"}}}},
		{"GET", "/api/v1/namespaces/other/secrets?watch=true&fieldSelector=metadata.name%3D%3Dfoo", Attributes{Verb: "watch", ResourceRequest: true, Path: "/api/v1/namespaces/other/secrets", APIVersion: "v1", Namespace: "other", Resource: "secrets", Name: "foo",
			FieldSelector: fields.Requirements{{Operator: selection.Equals, Field: "metadata.name", Value: "foo"}}}},
		{"GET", "/api/v1/namespaces/other/secrets?fieldSelector=metadata.name%21%3Dfoo", Attributes{Verb: "list", ResourceRequest: true, Path: "/api/v1/namespaces/other/secrets", APIVersion: "v1", Namespace: "other", Resource: "secrets",
			FieldSelector: fields.Requirements{{Operator: selection.NotEquals, Field: "metadata.name", Value: "foo"}}}},
		{"GET", "/api/v1/namespaces/other/secrets?fieldSelector=metadata.name%3D..", Attributes{Verb: "list", ResourceRequest: true, Path: "/api/v1/namespaces/other/secrets", APIVersion: "v1", Namespace: "other", Resource: "secrets",
			FieldSelector: fields.Requirements{{Operator: selection.Equals, Field: "metadata.name", Value: ".."}}}},
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", Attributes{Verb: "list", ResourceRequest: true, Path: "/api/v1/pods", APIVersion: "v1", Resource: "pods",
			FieldSelector: fields.Requirements{{Operator: selection.Equals, Field: "spec.nodeName", Value: "n1"}}}},
		// Options that do not decode name nothing, and a watch stays a watch.
		{"GET", "/api/v1/namespaces/other/secrets?watch=true&limit=x&fieldSelector=metadata.name%3Dfoo", Attributes{Verb: "watch", ResourceRequest: true, Path: "/api/v1/namespaces/other/secrets", APIVersion: "v1", Namespace: "other", Resource: "secrets",
			FieldSelector: fields.Requirements{{Operator: selection.Equals, Field: "metadata.name", Value: "foo"}}}},
		// Selectors given on a verb in the path are not used.
		{"GET", "/api/v1/watch/pods?fieldSelector=spec.nodeName%3Dn1", Attributes{Verb: "watch", ResourceRequest: true, Path: "/api/v1/watch/pods", APIVersion: "v1", Resource: "pods"}},
		// Non-resource paths.
		{"GET", "/api", Attributes{Verb: "get", Path: "/api"}},
		{"GET", "/api/v1", Attributes{Verb: "get", Path: "/api/v1"}},
		{"GET", "/apis", Attributes{Verb: "get", Path: "/apis"}},
		{"GET", "/apis/apps", Attributes{Verb: "get", Path: "/apis/apps"}},
		{"GET", "/apis/apps/v1", Attributes{Verb: "get", Path: "/apis/apps/v1"}},
		{"GET", "/healthz", Attributes{Verb: "get", Path: "/healthz"}},
		{"GET", "/openapi/v3/apis/apps/v1", Attributes{Verb: "get", Path: "/openapi/v3/apis/apps/v1"}},
		{"POST", "/foo/bar/baz", Attributes{Verb: "post", Path: "/foo/bar/baz"}},
		{"HEAD", "/", Attributes{Verb: "head", Path: "/"}},
		{"DELETE", "/logs/x", Attributes{Verb: "delete", Path: "/logs/x"}},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.url, func(t *testing.T) {
			got, err := Parse(httptest.NewRequest(tc.method, tc.url, nil))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("attributes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseVerbWithoutResource(t *testing.T) {
	for _, url := range []string{"/api/v1/watch", "/apis/apps/v1/proxy"} {
		t.Run(url, func(t *testing.T) {
			a, err := Parse(httptest.NewRequest(http.MethodGet, url, nil))
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want an error", url, a)
			}
			if !a.ResourceRequest {
				t.Errorf("attributes %+v: want a resource request as far as parsed", a)
			}
		})
	}
}
