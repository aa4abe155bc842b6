package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"minik8s.io/apiserver/internal/metricsource"
	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/shared/apierror"
	metricsv1beta1 "minik8s.io/shared/apis/metrics/v1beta1"
	"minik8s.io/shared/scheme"
)

// The metrics.k8s.io/v1beta1 resources, served from the kubelets' stats (metricsource)
// rather than storage: only get and list.
var (
	metricsGV        = metricsv1beta1.SchemeGroupVersion
	metricsResources = []metav1.APIResource{
		{Name: "nodes", SingularName: "", Namespaced: false, Kind: "NodeMetrics", Verbs: metav1.Verbs{"get", "list"}},
		{Name: "pods", SingularName: "", Namespaced: true, Kind: "PodMetrics", Verbs: metav1.Verbs{"get", "list"}},
	}
)

// kubeletTargets lists the kubelets metricsource scrapes: every node that reports an address.
func (s *Server) kubeletTargets(ctx context.Context) ([]metricsource.Target, error) {
	nodes, _ := scheme.Lookup("nodes")
	list, err := s.reg.List(ctx, registry.Key{Resource: nodes}, registry.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []metricsource.Target
	for _, obj := range list.Items {
		n := obj.(*corev1.Node)
		u, err := kubeletURLOf(n)
		if err != nil {
			continue
		}
		out = append(out, metricsource.Target{Node: n.Name, URL: u.String()})
	}
	return out, nil
}

// resourceMetrics serves GET below /apis/metrics.k8s.io/v1beta1/: nodes, nodes/<name>, pods,
// namespaces/<ns>/pods and namespaces/<ns>/pods/<name>.
func (s *Server) resourceMetrics(c *gin.Context, path string) {
	segs := strings.Split(path, "/")
	namespace := ""
	if len(segs) >= 3 && segs[0] == "namespaces" && segs[2] == "pods" {
		namespace, segs = segs[1], segs[2:]
	}
	if len(segs) == 0 || len(segs) > 2 || (segs[0] != "pods" && segs[0] != "nodes") || (segs[0] == "nodes" && namespace != "") ||
		(segs[0] == "pods" && len(segs) == 2 && namespace == "") {
		writeError(c, apierror.New(apierror.ErrNotFound, "the server could not find the requested resource"))
		return
	}
	c.Set(resourceKey, segs[0])
	if c.Request.Method != http.MethodGet {
		writeError(c, apierror.New(apierror.ErrMethodNotAllowed, "the server does not allow this method on the requested resource"))
		return
	}
	q := c.Request.URL.Query()
	if w := q.Get("watch"); w != "" && w != "false" && w != "0" {
		writeError(c, apierror.New(apierror.ErrMethodNotAllowed, "watch is not supported on %s.%s", segs[0], metricsGV.Group))
		return
	}
	if s.metrics == nil {
		writeError(c, apierror.New(apierror.ErrUnavailable, "no kubelet client is configured on this apiserver: resource metrics are not available"))
		return
	}
	sel, err := metricsSelector(q)
	if err != nil {
		writeError(c, err)
		return
	}
	name := ""
	if len(segs) == 2 {
		name = segs[1]
	}
	if segs[0] == "nodes" {
		s.nodeMetrics(c, name, sel)
	} else {
		s.podMetrics(c, namespace, name, sel)
	}
}

func metricsSelector(q url.Values) (labels.Selector, error) {
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return nil, apierror.New(apierror.ErrBadRequest, "unable to parse labelSelector: %v", err)
	}
	return sel, nil
}

func (s *Server) nodeMetrics(c *gin.Context, name string, sel labels.Selector) {
	ctx := c.Request.Context()
	nodes, _ := scheme.Lookup("nodes")
	list, err := s.reg.List(ctx, registry.Key{Resource: nodes}, registry.ListOptions{Selectors: registry.Selectors{Labels: sel}})
	if err != nil {
		writeError(c, err)
		return
	}
	byName := map[string]*corev1.Node{}
	for _, obj := range list.Items {
		n := obj.(*corev1.Node)
		byName[n.Name] = n
	}
	out := &metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: metricsGV.String()},
		ListMeta: metav1.ListMeta{ResourceVersion: ""}, Items: []metricsv1beta1.NodeMetrics{}}
	for _, u := range s.metrics.Nodes(ctx) {
		n, ok := byName[u.Name]
		if !ok || (name != "" && u.Name != name) {
			continue
		}
		out.Items = append(out.Items, metricsv1beta1.NodeMetrics{
			TypeMeta:   metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: metricsGV.String()},
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: metav1.NewTime(s.cfg.Now())},
			Timestamp:  metav1.NewTime(u.Timestamp), Window: metav1.Duration{Duration: u.Window.Round(time.Millisecond)},
			Usage: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(u.MilliCPU, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(u.MemoryBytes, resource.BinarySI)},
		})
	}
	if name == "" {
		writeJSON(c, http.StatusOK, out)
		return
	}
	if len(out.Items) == 0 {
		writeError(c, apierror.NotFound(metricsGV.Group, "nodes", name))
		return
	}
	writeJSON(c, http.StatusOK, &out.Items[0])
}

func (s *Server) podMetrics(c *gin.Context, namespace, name string, sel labels.Selector) {
	ctx := c.Request.Context()
	pods, _ := scheme.Lookup("pods")
	list, err := s.reg.List(ctx, registry.Key{Resource: pods, Namespace: namespace}, registry.ListOptions{Selectors: registry.Selectors{Labels: sel}})
	if err != nil {
		writeError(c, err)
		return
	}
	byUID := map[string]*corev1.Pod{}
	for _, obj := range list.Items {
		p := obj.(*corev1.Pod)
		byUID[string(p.UID)] = p
	}
	out := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: metricsGV.String()},
		Items: []metricsv1beta1.PodMetrics{}}
	for _, u := range s.metrics.Pods(ctx) {
		p, ok := byUID[u.UID]
		if !ok || (name != "" && p.Name != name) {
			continue
		}
		pm := metricsv1beta1.PodMetrics{
			TypeMeta:   metav1.TypeMeta{Kind: "PodMetrics", APIVersion: metricsGV.String()},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, CreationTimestamp: metav1.NewTime(s.cfg.Now())},
			Timestamp:  metav1.NewTime(u.Timestamp), Window: metav1.Duration{Duration: u.Window.Round(time.Millisecond)},
			Containers: []metricsv1beta1.ContainerMetrics{},
		}
		for _, ct := range u.Containers {
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: ct.Name, Usage: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(ct.MilliCPU, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(ct.MemoryBytes, resource.BinarySI)}})
		}
		out.Items = append(out.Items, pm)
	}
	if name == "" {
		writeJSON(c, http.StatusOK, out)
		return
	}
	if len(out.Items) == 0 {
		writeError(c, apierror.NotFound(metricsGV.Group, "pods", name))
		return
	}
	writeJSON(c, http.StatusOK, &out.Items[0])
}
