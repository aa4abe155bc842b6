package audit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const examplePolicy = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  resources:
  - group: ""
    resources: ["pods"]
- level: Metadata
  resources:
  - group: ""
    resources: ["pods/log", "pods/status"]
- level: None
  resources:
  - group: ""
    resources: ["configmaps"]
    resourceNames: ["controller-leader"]
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
  resources:
  - group: ""
    resources: ["endpoints", "services"]
- level: None
  userGroups: ["system:authenticated"]
  nonResourceURLs: ["/api*", "/version"]
- level: Request
  resources:
  - group: ""
    resources: ["configmaps"]
  namespaces: ["kube-system"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets", "configmaps"]
- level: Request
  resources:
  - group: ""
  - group: "extensions"
- level: Metadata
  resources:
  - group: "apps"
    resources: ["*/scale"]
  omitStages: [ResponseStarted]
- level: Metadata
`

// The policy of Kubernetes' documentation, matched as its checker matches it.
func TestEvaluate(t *testing.T) {
	p, err := ParsePolicy([]byte(examplePolicy))
	if err != nil {
		t.Fatal(err)
	}
	res := func(verb, group, resource, sub, ns, name string) Attributes {
		return Attributes{User: "alice", Groups: []string{"system:authenticated"}, Verb: verb, ResourceRequest: true,
			APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	cases := []struct {
		name string
		a    Attributes
		want Decision
	}{
		{"pods in full", res("create", "", "pods", "", "ns", "p"), Decision{LevelRequestResponse, []Stage{StageRequestReceived}}},
		{"pod logs by subresource", res("get", "", "pods", "log", "ns", "p"), Decision{LevelMetadata, []Stage{StageRequestReceived}}},
		{"a named configmap", res("update", "", "configmaps", "", "ns", "controller-leader"), Decision{LevelNone, []Stage{StageRequestReceived}}},
		{"kube-proxy's watches", Attributes{User: "system:kube-proxy", Verb: "watch", ResourceRequest: true, Resource: "services"}, Decision{LevelNone, []Stage{StageRequestReceived}}},
		{"kube-proxy's gets fall through", Attributes{User: "system:kube-proxy", Verb: "get", ResourceRequest: true, Resource: "services", Namespace: "ns"}, Decision{LevelRequest, []Stage{StageRequestReceived}}},
		{"discovery", Attributes{User: "alice", Groups: []string{"system:authenticated"}, Verb: "get", Path: "/apis/apps"}, Decision{LevelNone, []Stage{StageRequestReceived}}},
		{"kube-system configmaps", res("update", "", "configmaps", "", "kube-system", "c"), Decision{LevelRequest, []Stage{StageRequestReceived}}},
		{"secrets", res("get", "", "secrets", "", "ns", "s"), Decision{LevelMetadata, []Stage{StageRequestReceived}}},
		{"the rest of core", res("get", "", "services", "", "ns", "s"), Decision{LevelRequest, []Stage{StageRequestReceived}}},
		{"any scale in apps", res("update", "apps", "deployments", "scale", "ns", "d"), Decision{LevelMetadata, []Stage{StageRequestReceived, StageResponseStarted}}},
		{"catch-all", res("get", "apps", "deployments", "", "ns", "d"), Decision{LevelMetadata, []Stage{StageRequestReceived}}},
		{"a non-resource URL no rule names", Attributes{User: "bob", Verb: "get", Path: "/metrics"}, Decision{LevelMetadata, []Stage{StageRequestReceived}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, p.Evaluate(tc.a)); diff != "" {
				t.Fatalf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePolicyErrors(t *testing.T) {
	cases := []struct{ name, policy, want string }{
		{"bad level", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n", `rules[0].level: Unsupported value: "Everything"`},
		{"bad stage", "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Soon]\nrules: []\n", `omitStages[0]: Unsupported value: "Soon"`},
		{"wrong version", "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: []\n", `apiVersion: Unsupported value: "audit.k8s.io/v1beta1"`},
		{"unknown field", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrulez: []\n", `unknown field "rulez"`},
		{"both kinds of rule", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [/x]\n  namespaces: [a]\n", `rules[0].nonResourceURLs`},
		{"bad url", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [x*y]\n", `rules[0].nonResourceURLs[0]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(tc.policy))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The policy make up uses parses, and keeps Secrets at Metadata.
func TestMakeUpPolicy(t *testing.T) {
	p, err := LoadPolicy("../../../configs/audit-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := p.Evaluate(Attributes{User: "admin", Verb: "create", ResourceRequest: true, Resource: "secrets", Namespace: "ns"})
	if got.Level != LevelMetadata {
		t.Fatalf("secrets at %s", got.Level)
	}
	if got := p.Evaluate(Attributes{User: "admin", Verb: "get", Path: "/readyz"}); got.Level != LevelNone {
		t.Fatalf("/readyz at %s", got.Level)
	}
}
