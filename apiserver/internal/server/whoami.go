package server

import (
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var authenticationGV = schema.GroupVersion{Group: authnv1.GroupName, Version: "v1"}

// selfSubjectReview answers POST /apis/authentication.k8s.io/v1/selfsubjectreviews with the
// caller's identity, as Kubernetes does for `kubectl auth whoami`. Kubelets ask it to learn
// whose token a request carries (only some identities may load images into a node).
func (s *Server) selfSubjectReview(c *gin.Context) {
	id, _ := IdentityFrom(c.Request.Context())
	groups := slices.Clone(id.Groups)
	if !slices.Contains(groups, "system:authenticated") {
		groups = append(groups, "system:authenticated")
	}
	c.JSON(http.StatusCreated, authnv1.SelfSubjectReview{
		TypeMeta:   metav1.TypeMeta{Kind: "SelfSubjectReview", APIVersion: authenticationGV.String()},
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(s.cfg.Now())},
		Status:     authnv1.SelfSubjectReviewStatus{UserInfo: authnv1.UserInfo{Username: id.Name, UID: id.UID, Groups: groups, Extra: extra(id.Extra)}},
	})
}

func extra(in map[string][]string) map[string]authnv1.ExtraValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]authnv1.ExtraValue, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
