package bootstrappolicy

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Verb sets, as Kubernetes' bootstrap policy names them.
var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)

// API groups the policy names.
const (
	legacyGroup         = ""
	appsGroup           = "apps"
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	autoscalingGroup    = "autoscaling"
	batchGroup          = "batch"
	coordinationGroup   = "coordination.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	eventsGroup         = "events.k8s.io"
	networkingGroup     = "networking.k8s.io"
	policyGroup         = "policy"
	rbacGroup           = rbacv1.GroupName
	storageGroup        = "storage.k8s.io"
	metricsGroup        = "metrics.k8s.io"
	serverlessGroup     = "serverless.minik8s.io"
)

// ruleBuilder makes one PolicyRule: rule(verbs...).groups(...).resources(...).
type ruleBuilder struct{ r rbacv1.PolicyRule }

func rule(verbs ...string) ruleBuilder {
	return ruleBuilder{rbacv1.PolicyRule{Verbs: slices.Clone(verbs)}}
}

func (b ruleBuilder) groups(g ...string) ruleBuilder {
	b.r.APIGroups = append(slices.Clone(b.r.APIGroups), g...)
	return b
}

func (b ruleBuilder) resources(r ...string) ruleBuilder {
	b.r.Resources = append(slices.Clone(b.r.Resources), r...)
	return b
}

func (b ruleBuilder) names(n ...string) ruleBuilder {
	b.r.ResourceNames = append(slices.Clone(b.r.ResourceNames), n...)
	return b
}

func (b ruleBuilder) urls(u ...string) ruleBuilder {
	b.r.NonResourceURLs = append(slices.Clone(b.r.NonResourceURLs), u...)
	return b
}

func (b ruleBuilder) rule() rbacv1.PolicyRule { return b.r }

// eventsRule is what every component that records Events needs: shared/record creates them
// and patches them to count repeats (update too, as Kubernetes' recorders may), and recorders
// of the newer API write the same events through events.k8s.io.
func eventsRule() rbacv1.PolicyRule {
	return rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").rule()
}

// Subjects of the default bindings.
func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}
