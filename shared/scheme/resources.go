package scheme

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// Resource describes one served resource, as discovery reports it.
type Resource struct {
	GVK        schema.GroupVersionKind
	Plural     string // "pods"
	Singular   string // "pod"
	Namespaced bool
	ShortNames []string
	Categories []string
	// Subresources served besides the main endpoint: "status", "binding", "scale", "log",
	// "ephemeralcontainers" (a pod's debug containers, the pod as body),
	// "invoke" (a function or workflow called through the serverless gateway), "token" (a
	// ServiceAccount token, TokenRequest), "proxy" (HTTP to a pod, a service's endpoint or a
	// node's kubelet).
	Subresources []string
	// DeleteCollection is served where Kubernetes serves it.
	DeleteCollection bool
	// New returns an empty object and an empty list of the kind.
	New     func() runtime.Object
	NewList func() runtime.Object
	// Storage, when set, is the resource this one is another served version of: its objects
	// are stored (and kept in caches and on the bus) as Storage's kind and converted at the
	// API's edge (see Convert).
	Storage *Resource
	// Custom says the resource is served from a CustomResourceDefinition: its objects are
	// unstructured, stored under <plural>.<group>, and it is not in Resources.
	Custom bool
	// StorageVersion is, for a custom resource, the version its objects are stored as; every
	// served version reads and writes the same objects, only apiVersion differs (a CRD's None
	// conversion).
	StorageVersion string
}

// Unstructured returns New and NewList for a kind known only at run time (a custom
// resource): unstructured objects and lists stamped with gvk and its list kind (listKind, or
// the kind with "List").
func Unstructured(gvk schema.GroupVersionKind, listKind string) (newObj, newList func() runtime.Object) {
	if listKind == "" {
		listKind = gvk.Kind + "List"
	}
	listGVK := gvk.GroupVersion().WithKind(listKind)
	return func() runtime.Object {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetGroupVersionKind(gvk)
			return u
		}, func() runtime.Object {
			l := &unstructured.UnstructuredList{Object: map[string]any{}}
			l.SetGroupVersionKind(listGVK)
			return l
		}
}

// StoragePlural is the resource's name in storage keys and on the bus: the plural, and for a
// custom resource its group too, so that a CRD cannot share a built-in kind's keys.
func (r *Resource) StoragePlural() string {
	if r.Custom {
		return r.Plural + "." + r.GVK.Group
	}
	return r.Plural
}

// Stored is the resource whose kind objects of r are stored as: r itself, or its Storage.
func (r *Resource) Stored() *Resource {
	if r.Storage != nil {
		return r.Storage
	}
	return r
}

// GVR is the group, version and plural resource name.
func (r *Resource) GVR() schema.GroupVersionResource {
	return r.GVK.GroupVersion().WithResource(r.Plural)
}

// StrategicMerge reports whether strategic merge patches apply: they need the patch strategy
// tags of the k8s.io/api types, which our own group does not carry (as with Kubernetes CRDs).
func (r *Resource) StrategicMerge() bool { return r.GVK.Group != serverlessv1.GroupName && !r.Custom }

// HasSubresource reports whether name is served for this resource.
func (r *Resource) HasSubresource(name string) bool {
	for _, s := range r.Subresources {
		if s == name {
			return true
		}
	}
	return false
}

// Resources lists every served resource, in the order discovery lists them.
var Resources = []*Resource{
	{GVK: corev1.SchemeGroupVersion.WithKind("Namespace"), Plural: "namespaces", Singular: "namespace", ShortNames: []string{"ns"},
		Subresources: []string{"status"}, New: func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("Node"), Plural: "nodes", Singular: "node", ShortNames: []string{"no"},
		Subresources: []string{"status", "proxy"}, DeleteCollection: true, New: func() runtime.Object { return &corev1.Node{} }, NewList: func() runtime.Object { return &corev1.NodeList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Plural: "pods", Singular: "pod", Namespaced: true, ShortNames: []string{"po"}, Categories: []string{"all"},
		Subresources: []string{"status", "binding", "eviction", "ephemeralcontainers", "log", "exec", "attach", "portforward", "proxy"}, DeleteCollection: true, New: func() runtime.Object { return &corev1.Pod{} }, NewList: func() runtime.Object { return &corev1.PodList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("ReplicationController"), Plural: "replicationcontrollers", Singular: "replicationcontroller", Namespaced: true, ShortNames: []string{"rc"}, Categories: []string{"all"},
		Subresources: []string{"status", "scale"}, DeleteCollection: true, New: func() runtime.Object { return &corev1.ReplicationController{} }, NewList: func() runtime.Object { return &corev1.ReplicationControllerList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("Service"), Plural: "services", Singular: "service", Namespaced: true, ShortNames: []string{"svc"}, Categories: []string{"all"},
		Subresources: []string{"status", "proxy"}, DeleteCollection: true, New: func() runtime.Object { return &corev1.Service{} }, NewList: func() runtime.Object { return &corev1.ServiceList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("Endpoints"), Plural: "endpoints", Singular: "endpoints", Namespaced: true, ShortNames: []string{"ep"},
		DeleteCollection: true, New: func() runtime.Object { return &corev1.Endpoints{} }, NewList: func() runtime.Object { return &corev1.EndpointsList{} }},
	{GVK: discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), Plural: "endpointslices", Singular: "endpointslice", Namespaced: true,
		DeleteCollection: true, New: func() runtime.Object { return &discoveryv1.EndpointSlice{} }, NewList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("Event"), Plural: "events", Singular: "event", Namespaced: true, ShortNames: []string{"ev"},
		DeleteCollection: true, New: func() runtime.Object { return &corev1.Event{} }, NewList: func() runtime.Object { return &corev1.EventList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Plural: "configmaps", Singular: "configmap", Namespaced: true, ShortNames: []string{"cm"},
		DeleteCollection: true, New: func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("Secret"), Plural: "secrets", Singular: "secret", Namespaced: true,
		DeleteCollection: true, New: func() runtime.Object { return &corev1.Secret{} }, NewList: func() runtime.Object { return &corev1.SecretList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("ServiceAccount"), Plural: "serviceaccounts", Singular: "serviceaccount", Namespaced: true, ShortNames: []string{"sa"},
		Subresources: []string{"token"}, DeleteCollection: true, New: func() runtime.Object { return &corev1.ServiceAccount{} }, NewList: func() runtime.Object { return &corev1.ServiceAccountList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("PersistentVolume"), Plural: "persistentvolumes", Singular: "persistentvolume", ShortNames: []string{"pv"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &corev1.PersistentVolume{} }, NewList: func() runtime.Object { return &corev1.PersistentVolumeList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), Plural: "persistentvolumeclaims", Singular: "persistentvolumeclaim", Namespaced: true, ShortNames: []string{"pvc"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &corev1.PersistentVolumeClaim{} }, NewList: func() runtime.Object { return &corev1.PersistentVolumeClaimList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("ResourceQuota"), Plural: "resourcequotas", Singular: "resourcequota", Namespaced: true, ShortNames: []string{"quota"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &corev1.ResourceQuota{} }, NewList: func() runtime.Object { return &corev1.ResourceQuotaList{} }},
	{GVK: corev1.SchemeGroupVersion.WithKind("LimitRange"), Plural: "limitranges", Singular: "limitrange", Namespaced: true, ShortNames: []string{"limits"},
		DeleteCollection: true, New: func() runtime.Object { return &corev1.LimitRange{} }, NewList: func() runtime.Object { return &corev1.LimitRangeList{} }},
	{GVK: storagev1.SchemeGroupVersion.WithKind("StorageClass"), Plural: "storageclasses", Singular: "storageclass", ShortNames: []string{"sc"},
		DeleteCollection: true, New: func() runtime.Object { return &storagev1.StorageClass{} }, NewList: func() runtime.Object { return &storagev1.StorageClassList{} }},
	{GVK: appsv1.SchemeGroupVersion.WithKind("DaemonSet"), Plural: "daemonsets", Singular: "daemonset", Namespaced: true, ShortNames: []string{"ds"}, Categories: []string{"all"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &appsv1.DaemonSet{} }, NewList: func() runtime.Object { return &appsv1.DaemonSetList{} }},
	{GVK: appsv1.SchemeGroupVersion.WithKind("Deployment"), Plural: "deployments", Singular: "deployment", Namespaced: true, ShortNames: []string{"deploy"}, Categories: []string{"all"},
		Subresources: []string{"status", "scale"}, DeleteCollection: true, New: func() runtime.Object { return &appsv1.Deployment{} }, NewList: func() runtime.Object { return &appsv1.DeploymentList{} }},
	{GVK: appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), Plural: "replicasets", Singular: "replicaset", Namespaced: true, ShortNames: []string{"rs"}, Categories: []string{"all"},
		Subresources: []string{"status", "scale"}, DeleteCollection: true, New: func() runtime.Object { return &appsv1.ReplicaSet{} }, NewList: func() runtime.Object { return &appsv1.ReplicaSetList{} }},
	{GVK: appsv1.SchemeGroupVersion.WithKind("StatefulSet"), Plural: "statefulsets", Singular: "statefulset", Namespaced: true, ShortNames: []string{"sts"}, Categories: []string{"all"},
		Subresources: []string{"status", "scale"}, DeleteCollection: true, New: func() runtime.Object { return &appsv1.StatefulSet{} }, NewList: func() runtime.Object { return &appsv1.StatefulSetList{} }},
	{GVK: appsv1.SchemeGroupVersion.WithKind("ControllerRevision"), Plural: "controllerrevisions", Singular: "controllerrevision", Namespaced: true,
		DeleteCollection: true, New: func() runtime.Object { return &appsv1.ControllerRevision{} }, NewList: func() runtime.Object { return &appsv1.ControllerRevisionList{} }},
	{GVK: schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), Plural: "priorityclasses", Singular: "priorityclass", ShortNames: []string{"pc"},
		DeleteCollection: true, New: func() runtime.Object { return &schedulingv1.PriorityClass{} }, NewList: func() runtime.Object { return &schedulingv1.PriorityClassList{} }},
	{GVK: autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), Plural: "horizontalpodautoscalers", Singular: "horizontalpodautoscaler", Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} }, NewList: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} }},
	{GVK: batchv1.SchemeGroupVersion.WithKind("Job"), Plural: "jobs", Singular: "job", Namespaced: true, Categories: []string{"all"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &batchv1.Job{} }, NewList: func() runtime.Object { return &batchv1.JobList{} }},
	{GVK: batchv1.SchemeGroupVersion.WithKind("CronJob"), Plural: "cronjobs", Singular: "cronjob", Namespaced: true, ShortNames: []string{"cj"}, Categories: []string{"all"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &batchv1.CronJob{} }, NewList: func() runtime.Object { return &batchv1.CronJobList{} }},
	{GVK: policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), Plural: "poddisruptionbudgets", Singular: "poddisruptionbudget", Namespaced: true, ShortNames: []string{"pdb"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &policyv1.PodDisruptionBudget{} }, NewList: func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} }},
	{GVK: networkingv1.SchemeGroupVersion.WithKind("Ingress"), Plural: "ingresses", Singular: "ingress", Namespaced: true, ShortNames: []string{"ing"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &networkingv1.Ingress{} }, NewList: func() runtime.Object { return &networkingv1.IngressList{} }},
	{GVK: networkingv1.SchemeGroupVersion.WithKind("IngressClass"), Plural: "ingressclasses", Singular: "ingressclass",
		DeleteCollection: true, New: func() runtime.Object { return &networkingv1.IngressClass{} }, NewList: func() runtime.Object { return &networkingv1.IngressClassList{} }},
	{GVK: networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"), Plural: "networkpolicies", Singular: "networkpolicy", Namespaced: true, ShortNames: []string{"netpol"},
		DeleteCollection: true, New: func() runtime.Object { return &networkingv1.NetworkPolicy{} }, NewList: func() runtime.Object { return &networkingv1.NetworkPolicyList{} }},
	{GVK: coordinationv1.SchemeGroupVersion.WithKind("Lease"), Plural: "leases", Singular: "lease", Namespaced: true,
		DeleteCollection: true, New: func() runtime.Object { return &coordinationv1.Lease{} }, NewList: func() runtime.Object { return &coordinationv1.LeaseList{} }},
	{GVK: rbacv1.SchemeGroupVersion.WithKind("Role"), Plural: "roles", Singular: "role", Namespaced: true,
		DeleteCollection: true, New: func() runtime.Object { return &rbacv1.Role{} }, NewList: func() runtime.Object { return &rbacv1.RoleList{} }},
	{GVK: rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), Plural: "clusterroles", Singular: "clusterrole",
		DeleteCollection: true, New: func() runtime.Object { return &rbacv1.ClusterRole{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} }},
	{GVK: rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), Plural: "rolebindings", Singular: "rolebinding", Namespaced: true,
		DeleteCollection: true, New: func() runtime.Object { return &rbacv1.RoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} }},
	{GVK: rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), Plural: "clusterrolebindings", Singular: "clusterrolebinding",
		DeleteCollection: true, New: func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }},
	{GVK: apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), Plural: "customresourcedefinitions", Singular: "customresourcedefinition", ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} }, NewList: func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} }},
	{GVK: admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"), Plural: "validatingwebhookconfigurations", Singular: "validatingwebhookconfiguration",
		DeleteCollection: true, New: func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} }, NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} }},
	{GVK: admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"), Plural: "mutatingwebhookconfigurations", Singular: "mutatingwebhookconfiguration",
		DeleteCollection: true, New: func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} }, NewList: func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} }},
	{GVK: serverlessv1.SchemeGroupVersion.WithKind("Function"), Plural: "functions", Singular: "function", Namespaced: true, ShortNames: []string{"fn"},
		Subresources: []string{"status", "invoke"}, DeleteCollection: true, New: func() runtime.Object { return &serverlessv1.Function{} }, NewList: func() runtime.Object { return &serverlessv1.FunctionList{} }},
	{GVK: serverlessv1.SchemeGroupVersion.WithKind("Workflow"), Plural: "workflows", Singular: "workflow", Namespaced: true, ShortNames: []string{"wf"},
		Subresources: []string{"status", "invoke"}, DeleteCollection: true, New: func() runtime.Object { return &serverlessv1.Workflow{} }, NewList: func() runtime.Object { return &serverlessv1.WorkflowList{} }},
	{GVK: serverlessv1.SchemeGroupVersion.WithKind("WorkflowExecution"), Plural: "workflowexecutions", Singular: "workflowexecution", Namespaced: true, ShortNames: []string{"wfx"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &serverlessv1.WorkflowExecution{} }, NewList: func() runtime.Object { return &serverlessv1.WorkflowExecutionList{} }},
}

// OtherVersions lists the resources served in a further version of a kind of Resources,
// converted on the way in and out; components only ever see the stored version.
var OtherVersions = []*Resource{
	{GVK: autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), Plural: "horizontalpodautoscalers", Singular: "horizontalpodautoscaler", Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"},
		Subresources: []string{"status"}, DeleteCollection: true, New: func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscaler{} }, NewList: func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} },
		Storage: mustStored(autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"))},
	{GVK: eventsv1.SchemeGroupVersion.WithKind("Event"), Plural: "events", Singular: "event", Namespaced: true, ShortNames: []string{"ev"},
		DeleteCollection: true, New: func() runtime.Object { return &eventsv1.Event{} }, NewList: func() runtime.Object { return &eventsv1.EventList{} },
		Storage: mustStored(corev1.SchemeGroupVersion.WithResource("events"))},
}

func mustStored(gvr schema.GroupVersionResource) *Resource {
	for _, r := range Resources {
		if r.GVR() == gvr {
			return r
		}
	}
	panic("no stored resource " + gvr.String())
}

// Served lists every served resource: Resources, then OtherVersions.
func Served() []*Resource {
	out := make([]*Resource, 0, len(Resources)+len(OtherVersions))
	return append(append(out, Resources...), OtherVersions...)
}

// GroupVersions lists the served group versions, core first, in discovery order.
func GroupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range Served() {
		gv := r.GVK.GroupVersion()
		if !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return out
}

// ByGVR finds a served resource by group, version and plural name.
func ByGVR(gvr schema.GroupVersionResource) (*Resource, bool) {
	for _, r := range Served() {
		if r.GVR() == gvr {
			return r, true
		}
	}
	return nil, false
}

// ByGVK finds a served resource by group, version and kind.
func ByGVK(gvk schema.GroupVersionKind) (*Resource, bool) {
	for _, r := range Served() {
		if r.GVK == gvk {
			return r, true
		}
	}
	return nil, false
}

// Lookup resolves what a user types (plural, singular, short name or kind, any case, with an
// optional ".group" suffix) to a resource.
func Lookup(name string) (*Resource, error) {
	n := strings.ToLower(name)
	group := ""
	if i := strings.Index(n, "."); i > 0 {
		n, group = n[:i], n[i+1:]
	}
	// Without a group, a kind's stored version answers first (events are core/v1 events).
	for _, r := range Served() {
		if group != "" && r.GVK.Group != group && !strings.HasPrefix(r.GVK.Group, group) {
			continue
		}
		if n == r.Plural || n == r.Singular || n == strings.ToLower(r.GVK.Kind) {
			return r, nil
		}
		for _, s := range r.ShortNames {
			if n == s {
				return r, nil
			}
		}
	}
	return nil, fmt.Errorf("the server doesn't have a resource type %q", name)
}
