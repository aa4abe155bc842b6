package server

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	authnv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/authorizer"
	"minik8s.io/shared/apierror"
)

var authorizationGV = schema.GroupVersion{Group: authorizationv1.GroupName, Version: "v1"}

// reviewResources are the create-only resources of the review groups, as discovery lists
// them: they are answered, never stored.
var reviewResources = map[schema.GroupVersion][]metav1.APIResource{
	authenticationGV: {
		{Name: "selfsubjectreviews", SingularName: "selfsubjectreview", Kind: "SelfSubjectReview", Verbs: metav1.Verbs{"create"}},
		{Name: "tokenreviews", SingularName: "tokenreview", Kind: "TokenReview", Verbs: metav1.Verbs{"create"}},
	},
	authorizationGV: {
		{Name: "localsubjectaccessreviews", SingularName: "localsubjectaccessreview", Namespaced: true, Kind: "LocalSubjectAccessReview", Verbs: metav1.Verbs{"create"}},
		{Name: "selfsubjectaccessreviews", SingularName: "selfsubjectaccessreview", Kind: "SelfSubjectAccessReview", Verbs: metav1.Verbs{"create"}},
		{Name: "selfsubjectrulesreviews", SingularName: "selfsubjectrulesreview", Kind: "SelfSubjectRulesReview", Verbs: metav1.Verbs{"create"}},
		{Name: "subjectaccessreviews", SingularName: "subjectaccessreview", Kind: "SubjectAccessReview", Verbs: metav1.Verbs{"create"}},
	},
}

// review answers the review resources; handled reports whether path was one.
func (s *Server) review(c *gin.Context, gv schema.GroupVersion, path string) (handled bool) {
	segs := strings.Split(path, "/")
	ns := ""
	if len(segs) == 3 && segs[0] == "namespaces" {
		ns, segs = segs[1], segs[2:]
	}
	if len(segs) != 1 {
		return false
	}
	var known bool
	for _, r := range reviewResources[gv] {
		if r.Name == segs[0] && r.Namespaced == (ns != "") {
			known = true
		}
	}
	if !known {
		return false
	}
	c.Set(resourceKey, segs[0])
	if c.Request.Method != http.MethodPost {
		writeError(c, apierror.New(apierror.ErrMethodNotAllowed, "the server does not allow this method on the requested resource"))
		return true
	}
	c.Set(verbKey, "create")
	switch segs[0] {
	case "selfsubjectreviews":
		s.selfSubjectReview(c)
	case "tokenreviews":
		s.tokenReview(c)
	case "selfsubjectaccessreviews":
		s.selfSubjectAccessReview(c)
	case "subjectaccessreviews":
		s.subjectAccessReview(c, "")
	case "localsubjectaccessreviews":
		s.subjectAccessReview(c, ns)
	case "selfsubjectrulesreviews":
		s.selfSubjectRulesReview(c)
	}
	return true
}

// readReview decodes a review's body (JSON, YAML or protobuf) as kind.
func readReview(c *gin.Context, into runtime.Object, gvk schema.GroupVersionKind) error {
	data, err := readBody(c)
	if err != nil {
		return err
	}
	return decodeInto(c, nil, data, into, gvk, metav1.FieldValidationStrict)
}

// checkAttributes: exactly one of resourceAttributes and nonResourceAttributes, as upstream
// validates access reviews.
func checkAttributes(kind string, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) error {
	spec := field.NewPath("spec")
	if (ra == nil) == (nra == nil) {
		return apierror.Invalid(authorizationv1.GroupName, kind, "", field.ErrorList{field.Invalid(spec.Child("resourceAttributes"), ra,
			"exactly one of nonResourceAttributes or resourceAttributes must be specified")})
	}
	return nil
}

// accessStatus decides and words the answer of an access review.
func (s *Server) accessStatus(c *gin.Context, a authorizer.Attributes) authorizationv1.SubjectAccessReviewStatus {
	d, reason, err := s.decide(c.Request.Context(), a)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: d == authorizer.Allow, Denied: d == authorizer.Deny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

func (s *Server) selfSubjectAccessReview(c *gin.Context) {
	var r authorizationv1.SelfSubjectAccessReview
	gvk := authorizationGV.WithKind("SelfSubjectAccessReview")
	if err := readReview(c, &r, gvk); err != nil {
		writeError(c, err)
		return
	}
	if err := checkAttributes(gvk.Kind, r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes); err != nil {
		writeError(c, err)
		return
	}
	u, _ := IdentityFrom(c.Request.Context())
	r.Status = s.accessStatus(c, reviewAttributes(u, r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes))
	r.TypeMeta = metav1.TypeMeta{Kind: gvk.Kind, APIVersion: authorizationGV.String()}
	r.CreationTimestamp = metav1.NewTime(s.cfg.Now())
	writeJSON(c, http.StatusCreated, &r)
}

// subjectAccessReview answers SubjectAccessReview, or LocalSubjectAccessReview in ns.
func (s *Server) subjectAccessReview(c *gin.Context, ns string) {
	kind := "SubjectAccessReview"
	if ns != "" {
		kind = "LocalSubjectAccessReview"
	}
	gvk := authorizationGV.WithKind(kind)
	var spec *authorizationv1.SubjectAccessReviewSpec
	var out runtime.Object
	var status *authorizationv1.SubjectAccessReviewStatus
	if ns == "" {
		r := &authorizationv1.SubjectAccessReview{}
		if err := readReview(c, r, gvk); err != nil {
			writeError(c, err)
			return
		}
		r.TypeMeta, r.CreationTimestamp = metav1.TypeMeta{Kind: kind, APIVersion: authorizationGV.String()}, metav1.NewTime(s.cfg.Now())
		spec, status, out = &r.Spec, &r.Status, r
	} else {
		r := &authorizationv1.LocalSubjectAccessReview{}
		if err := readReview(c, r, gvk); err != nil {
			writeError(c, err)
			return
		}
		if r.Namespace != "" && r.Namespace != ns {
			writeError(c, apierror.New(apierror.ErrBadRequest, "namespace of the provided object (%s) does not match the namespace sent on the request (%s)", r.Namespace, ns))
			return
		}
		r.TypeMeta, r.CreationTimestamp, r.Namespace = metav1.TypeMeta{Kind: kind, APIVersion: authorizationGV.String()}, metav1.NewTime(s.cfg.Now()), ns
		spec, status, out = &r.Spec, &r.Status, r
	}
	if err := checkAttributes(kind, spec.ResourceAttributes, spec.NonResourceAttributes); err != nil {
		writeError(c, err)
		return
	}
	if spec.User == "" && len(spec.Groups) == 0 {
		writeError(c, apierror.Invalid(authorizationv1.GroupName, kind, "", field.ErrorList{field.Invalid(field.NewPath("spec", "user"), spec.User,
			"at least one of user or group must be specified")}))
		return
	}
	if ns != "" {
		if spec.ResourceAttributes == nil || (spec.ResourceAttributes.Namespace != "" && spec.ResourceAttributes.Namespace != ns) {
			writeError(c, apierror.Invalid(authorizationv1.GroupName, kind, "", field.ErrorList{field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"),
				nsOf(spec.ResourceAttributes), "must match metadata.namespace")}))
			return
		}
		spec.ResourceAttributes.Namespace = ns
	}
	*status = s.accessStatus(c, reviewAttributes(reviewUser(*spec), spec.ResourceAttributes, spec.NonResourceAttributes))
	writeJSON(c, http.StatusCreated, out)
}

func nsOf(ra *authorizationv1.ResourceAttributes) string {
	if ra == nil {
		return ""
	}
	return ra.Namespace
}

func (s *Server) selfSubjectRulesReview(c *gin.Context) {
	var r authorizationv1.SelfSubjectRulesReview
	gvk := authorizationGV.WithKind("SelfSubjectRulesReview")
	if err := readReview(c, &r, gvk); err != nil {
		writeError(c, err)
		return
	}
	if r.Spec.Namespace == "" {
		writeError(c, apierror.Invalid(authorizationv1.GroupName, gvk.Kind, "", field.ErrorList{field.Required(field.NewPath("spec", "namespace"), "")}))
		return
	}
	u, _ := IdentityFrom(c.Request.Context())
	r.TypeMeta, r.CreationTimestamp = metav1.TypeMeta{Kind: gvk.Kind, APIVersion: authorizationGV.String()}, metav1.NewTime(s.cfg.Now())
	if s.access == nil {
		r.Status = authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
			NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
		}
	} else {
		rr, nrr, incomplete, err := s.access.RulesFor(c.Request.Context(), u, r.Spec.Namespace)
		r.Status = authorizationv1.SubjectRulesReviewStatus{ResourceRules: rr, NonResourceRules: nrr, Incomplete: incomplete}
		if err != nil {
			r.Status.EvaluationError = err.Error()
		}
		if u.InGroup(authorizer.SystemPrivilegedGroup) {
			// system:masters is allowed everything by the chain's first authorizer.
			r.Status.ResourceRules = append([]authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}, r.Status.ResourceRules...)
			r.Status.NonResourceRules = append([]authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}, r.Status.NonResourceRules...)
		}
	}
	if r.Status.ResourceRules == nil {
		r.Status.ResourceRules = []authorizationv1.ResourceRule{}
	}
	if r.Status.NonResourceRules == nil {
		r.Status.NonResourceRules = []authorizationv1.NonResourceRule{}
	}
	writeJSON(c, http.StatusCreated, &r)
}

func (s *Server) tokenReview(c *gin.Context) {
	var r authnv1.TokenReview
	gvk := authenticationGV.WithKind("TokenReview")
	if err := readReview(c, &r, gvk); err != nil {
		writeError(c, err)
		return
	}
	if s.cfg.Tokens == nil {
		writeError(c, apierror.New(apierror.ErrUnavailable, "token review is not configured"))
		return
	}
	out, err := s.cfg.Tokens.Review(c.Request.Context(), &r)
	if err != nil {
		writeError(c, err)
		return
	}
	out.TypeMeta, out.CreationTimestamp = metav1.TypeMeta{Kind: gvk.Kind, APIVersion: authenticationGV.String()}, metav1.NewTime(s.cfg.Now())
	writeJSON(c, http.StatusCreated, out)
}
