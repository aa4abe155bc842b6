package server

import (
	"net/http"
	"sort"

	"github.com/gin-gonic/gin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// Version is what /version reports; minor matches the Kubernetes API we follow.
var Version = version.Info{
	Major:      "1",
	Minor:      "32",
	GitVersion: "v1.32.0-minik8s",
	GoVersion:  "",
	Compiler:   "gc",
	Platform:   "linux/amd64",
}

func (s *Server) version(c *gin.Context) { writeJSON(c, http.StatusOK, Version) }

func (s *Server) serverAddresses() []metav1.ServerAddressByClientCIDR {
	return []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: s.cfg.ExternalAddress}}
}

func (s *Server) apiVersions(c *gin.Context) {
	writeJSON(c, http.StatusOK, &metav1.APIVersions{
		TypeMeta:                   metav1.TypeMeta{Kind: "APIVersions"},
		Versions:                   []string{"v1"},
		ServerAddressByClientCIDRs: s.serverAddresses(),
	})
}

func (s *Server) groups() []metav1.APIGroup {
	var out []metav1.APIGroup
	index := map[string]int{}
	for _, gv := range groupVersions(s.reg.Served()) {
		if gv.Group == "" {
			continue
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		if i, ok := index[gv.Group]; ok {
			// A further version of a group; the first, the stored one, is preferred.
			out[i].Versions = append(out[i].Versions, v)
			continue
		}
		index[gv.Group] = len(out)
		out = append(out, metav1.APIGroup{
			TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name:             gv.Group,
			Versions:         []metav1.GroupVersionForDiscovery{v},
			PreferredVersion: v,
		})
	}
	for _, gv := range []schema.GroupVersion{authenticationGV, authorizationGV} {
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		out = append(out, metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	if s.metrics != nil {
		v := metav1.GroupVersionForDiscovery{GroupVersion: metricsGV.String(), Version: metricsGV.Version}
		out = append(out, metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name: metricsGV.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return out
}

func (s *Server) apiGroups(c *gin.Context) {
	writeJSON(c, http.StatusOK, &metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   s.groups(),
	})
}

func (s *Server) apiGroup(c *gin.Context) {
	for _, g := range s.groups() {
		if g.Name == c.Param("group") {
			writeJSON(c, http.StatusOK, &g)
			return
		}
	}
	writeError(c, apierror.New(apierror.ErrNotFound, "the server could not find the requested resource"))
}

func (s *Server) legacyResources(c *gin.Context) {
	s.resourceList(c, schema.GroupVersion{Version: "v1"})
}

func (s *Server) groupResources(c *gin.Context) {
	s.resourceList(c, schema.GroupVersion{Group: c.Param("group"), Version: c.Param("version")})
}

var (
	verbsFull   = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	verbsNoColl = metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	verbsStatus = metav1.Verbs{"get", "patch", "update"}
)

// resourceList is the APIResourceList of one group version, subresources included.
func (s *Server) resourceList(c *gin.Context, gv schema.GroupVersion) {
	list := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.String(),
	}
	if gv == metricsGV && s.metrics != nil {
		list.APIResources = metricsResources
	}
	list.APIResources = append(list.APIResources, reviewResources[gv]...)
	for _, r := range s.reg.Served() {
		if r.GVK.GroupVersion() != gv {
			continue
		}
		verbs := verbsNoColl
		if r.DeleteCollection {
			verbs = verbsFull
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r.Plural, SingularName: r.Singular, Namespaced: r.Namespaced, Kind: r.GVK.Kind,
			Verbs: verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
		for _, sub := range r.Subresources {
			ar := metav1.APIResource{Name: r.Plural + "/" + sub, Namespaced: r.Namespaced, Kind: r.GVK.Kind}
			switch sub {
			case "status", "ephemeralcontainers":
				ar.Verbs = verbsStatus
			case "binding":
				ar.Kind, ar.Verbs = "Binding", metav1.Verbs{"create"}
			case "scale":
				ar.Group, ar.Version, ar.Kind, ar.Verbs = "autoscaling", "v1", "Scale", verbsStatus
			case "log":
				ar.Kind, ar.Verbs = "Pod", metav1.Verbs{"get"}
			case "eviction":
				ar.Group, ar.Version, ar.Kind, ar.Verbs = "policy", "v1", "Eviction", metav1.Verbs{"create"}
			case "exec":
				ar.Kind, ar.Verbs = "PodExecOptions", metav1.Verbs{"create", "get"}
			case "attach":
				ar.Kind, ar.Verbs = "PodAttachOptions", metav1.Verbs{"create", "get"}
			case "invoke":
				ar.Verbs = metav1.Verbs{"create"}
			case "token":
				ar.Group, ar.Version, ar.Kind, ar.Verbs = authenticationGV.Group, authenticationGV.Version, "TokenRequest", metav1.Verbs{"create"}
			case "portforward":
				ar.Kind, ar.Verbs = "PodPortForwardOptions", metav1.Verbs{"create", "get"}
			case "proxy":
				ar.Kind, ar.Verbs = r.GVK.Kind+"ProxyOptions", metav1.Verbs{"create", "delete", "get", "patch", "update"}
			}
			list.APIResources = append(list.APIResources, ar)
		}
	}
	if len(list.APIResources) == 0 {
		writeError(c, apierror.New(apierror.ErrNotFound, "the server could not find the requested resource"))
		return
	}
	sort.SliceStable(list.APIResources, func(i, j int) bool { return list.APIResources[i].Name < list.APIResources[j].Name })
	writeJSON(c, http.StatusOK, list)
}

// groupVersions lists the group versions of resources in order of first appearance: the
// built-in ones in discovery order, then custom ones, each group's preferred version first.
func groupVersions(resources []*scheme.Resource) []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range resources {
		gv := r.GVK.GroupVersion()
		if !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return out
}
