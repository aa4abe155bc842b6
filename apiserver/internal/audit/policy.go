package audit

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Attributes are what a policy matches a request on.
type Attributes struct {
	User            string
	Groups          []string
	Verb            string
	ResourceRequest bool
	Path            string
	APIGroup        string
	Namespace       string
	Resource        string
	Subresource     string
	Name            string
}

// LoadPolicy reads a policy file (YAML or JSON).
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read audit policy: %w", err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("audit policy %s: %w", path, err)
	}
	return p, nil
}

// ParsePolicy decodes and checks a policy: unknown fields, an unknown level or stage, or
// another kind are errors naming the field.
func ParsePolicy(data []byte) (*Policy, error) {
	var p Policy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	if p.APIVersion != GroupVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), p.APIVersion, []string{GroupVersion}))
	}
	if p.Kind != "Policy" {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), p.Kind, []string{"Policy"}))
	}
	errs = append(errs, checkStages(field.NewPath("omitStages"), p.OmitStages)...)
	for i, r := range p.Rules {
		path := field.NewPath("rules").Index(i)
		switch r.Level {
		case LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse:
		default:
			errs = append(errs, field.NotSupported(path.Child("level"), r.Level, []string{string(LevelNone), string(LevelMetadata), string(LevelRequest), string(LevelRequestResponse)}))
		}
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			errs = append(errs, field.Invalid(path.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		for j, u := range r.NonResourceURLs {
			if u == "" || (u != "*" && !strings.HasPrefix(u, "/")) || strings.Contains(strings.TrimSuffix(u, "*"), "*") {
				errs = append(errs, field.Invalid(path.Child("nonResourceURLs").Index(j), u, "non-resource URL paths must begin with / and may end with a single *"))
			}
		}
		errs = append(errs, checkStages(path.Child("omitStages"), r.OmitStages)...)
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &p, nil
}

func checkStages(path *field.Path, stages []Stage) field.ErrorList {
	var errs field.ErrorList
	for i, s := range stages {
		switch s {
		case StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic:
		default:
			errs = append(errs, field.NotSupported(path.Index(i), s, []string{string(StageRequestReceived), string(StageResponseStarted), string(StageResponseComplete), string(StagePanic)}))
		}
	}
	return errs
}

// Decision is how a request is recorded.
type Decision struct {
	Level      Level
	OmitStages []Stage
}

// Evaluate finds the first rule matching a and returns its level and the stages to leave out
// (the policy's and the rule's); None when no rule matches.
func (p *Policy) Evaluate(a Attributes) Decision {
	for _, r := range p.Rules {
		if r.matches(a) {
			return Decision{Level: r.Level, OmitStages: append(slices.Clone(p.OmitStages), r.OmitStages...)}
		}
	}
	return Decision{Level: LevelNone, OmitStages: p.OmitStages}
}

func (r *PolicyRule) matches(a Attributes) bool {
	if len(r.Users) > 0 && !slices.Contains(r.Users, a.User) {
		return false
	}
	if len(r.UserGroups) > 0 && !slices.ContainsFunc(r.UserGroups, func(g string) bool { return slices.Contains(a.Groups, g) }) {
		return false
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, a.Verb) {
		return false
	}
	if a.ResourceRequest {
		return len(r.NonResourceURLs) == 0 && r.matchesResource(a)
	}
	if len(r.Resources) > 0 || len(r.Namespaces) > 0 {
		return false
	}
	return len(r.NonResourceURLs) == 0 || matchesURL(r.NonResourceURLs, a.Path)
}

// matchesResource: the namespace ("" is cluster-scoped) and one of the group resources, with
// subresources spelt "pods/log", "*/status" or "pods/*" as Kubernetes' checker reads them.
func (r *PolicyRule) matchesResource(a Attributes) bool {
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, a.Namespace) {
		return false
	}
	if len(r.Resources) == 0 {
		return true
	}
	combined := a.Resource
	if a.Subresource != "" {
		combined += "/" + a.Subresource
	}
	for _, gr := range r.Resources {
		if gr.Group != a.APIGroup {
			continue
		}
		if len(gr.Resources) == 0 {
			return true
		}
		for _, res := range gr.Resources {
			if res == combined || res == "*" || res == "*/"+a.Subresource && a.Subresource != "" ||
				res == a.Resource+"/*" {
				if len(gr.ResourceNames) == 0 || slices.Contains(gr.ResourceNames, a.Name) {
					return true
				}
			}
		}
	}
	return false
}

func matchesURL(urls []string, path string) bool {
	for _, u := range urls {
		if u == "*" || u == path || strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")) {
			return true
		}
	}
	return false
}
