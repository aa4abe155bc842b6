package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"minik8s.io/shared/apierror"
)

// allowSecrets allows reading Secrets and nothing else, for the authorizer variable.
type allowSecrets struct{}

func (allowSecrets) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetResource() == "secrets" && a.GetVerb() == "get" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// A webhook's matchConditions decide after its rules and selectors: all true calls it, one
// false skips it, and one that fails to evaluate follows the failure policy (Fail refuses the
// write with 403, Ignore skips the webhook), as in Kubernetes.
func TestMatchConditions(t *testing.T) {
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	hookWith := func(policy admissionregistrationv1.FailurePolicyType, exprs ...string) *hook {
		h := newTestHook(t, "Equivalent", nil, nil, rule(all, core, v1, []string{"pods"}, ""))
		var conds []admissionregistrationv1.MatchCondition
		for i, e := range exprs {
			conds = append(conds, admissionregistrationv1.MatchCondition{Name: "c" + string(rune('a'+i)), Expression: e})
		}
		if errs := ValidateMatchConditions(conds, field.NewPath("matchConditions")); len(errs) > 0 {
			t.Fatalf("conditions %q refused: %v", exprs, errs)
		}
		h.matcher = newMatcher(conds, &policy, typeValidating, h.name)
		return h
	}
	write := &Attributes{Operation: admissionv1.Create, Kind: podsGVR.GroupVersion().WithKind("Pod"), Resource: podsGVR, RequestResource: podsGVR,
		Namespaced: true, Namespace: "team-a", Name: "p", Object: pod("team-a", map[string]string{"tier": "web"}),
		User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"devs"}}}
	cases := []struct {
		name      string
		hook      *hook
		want      bool
		wantCode  int32
		wantInMsg string
	}{
		{"no conditions", hookWith(fail), true, 0, ""},
		{"all true", hookWith(fail, `object.metadata.labels["tier"] == "web"`, `request.userInfo.username == "alice"`, `oldObject == null`), true, 0, ""},
		{"one false", hookWith(fail, `true`, `request.namespace == "kube-system"`), false, 0, ""},
		{"false wins over an error", hookWith(fail, `object.spec.nodeName.startsWith("x")`, `false`), false, 0, ""},
		{"an error under Fail", hookWith(fail, `object.metadata.labels["missing"] == "x"`), false, http.StatusForbidden, `pods "p" is forbidden:`},
		{"an error under Ignore", hookWith(ignore, `object.metadata.labels["missing"] == "x"`), false, 0, ""},
		{"authorizer", hookWith(fail, `authorizer.group("").resource("secrets").namespace("team-a").check("get").allowed()`,
			`!authorizer.group("").resource("pods").check("delete").allowed()`), true, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.hook.matches(t.Context(), write, func(context.Context, string) (labels.Set, error) { return nil, nil }, allowSecrets{})
			if tc.wantCode != 0 {
				st := apierror.ToStatus(err)
				if err == nil || st.Code != tc.wantCode || !strings.Contains(st.Message, tc.wantInMsg) {
					t.Fatalf("err = %v (code %d), want %d containing %q", err, st.Code, tc.wantCode, tc.wantInMsg)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("matches = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestValidateMatchConditions(t *testing.T) {
	many := make([]admissionregistrationv1.MatchCondition, 65)
	for i := range many {
		many[i] = admissionregistrationv1.MatchCondition{Name: "c" + strings.Repeat("x", i), Expression: "true"}
	}
	for _, tc := range []struct {
		name  string
		conds []admissionregistrationv1.MatchCondition
		want  []string // each in one error
	}{
		{"valid", []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "true"}, {Name: "example.com/b", Expression: "object != null"}}, nil},
		{"missing fields", []admissionregistrationv1.MatchCondition{{}}, []string{"m[0].expression: Required value", "m[0].name: Required value"}},
		{"duplicate name", []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "true"}, {Name: "a", Expression: "true"}}, []string{`m[1].name: Duplicate value: "a"`}},
		{"bad name", []admissionregistrationv1.MatchCondition{{Name: "no spaces", Expression: "true"}}, []string{`m[0].name: Invalid value: "no spaces"`}},
		{"not a bool", []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "1 + 2"}}, []string{"m[0].expression: Invalid value", "bool"}},
		{"does not compile", []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "object.("}}, []string{"m[0].expression: Invalid value", "Syntax error"}},
		{"unknown variable", []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "params.x == 1"}}, []string{"m[0].expression: Invalid value", "params"}},
		{"too many", many, []string{"m: Too many: 65: must have at most 64 items"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateMatchConditions(tc.conds, field.NewPath("m"))
			if len(tc.want) == 0 && len(errs) > 0 {
				t.Fatalf("refused: %v", errs)
			}
			all := errs.ToAggregate()
			for _, w := range tc.want {
				if all == nil || !strings.Contains(all.Error(), w) {
					t.Errorf("errors %v lack %q", all, w)
				}
			}
		})
	}
}
