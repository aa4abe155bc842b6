package node

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"

	"minik8s.io/apiserver/internal/authorizer"
)

// graph is an in-memory Graph.
type graph struct {
	pods []*corev1.Pod
	pvcs []*corev1.PersistentVolumeClaim
	pvs  []*corev1.PersistentVolume
}

var errNotFound = errors.New("not found")

func (g *graph) PodsOnNode(node string) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, p := range g.pods {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, nil
}

func (g *graph) PersistentVolumeClaim(namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	for _, c := range g.pvcs {
		if c.Namespace == namespace && c.Name == name {
			return c, nil
		}
	}
	return nil, errNotFound
}

func (g *graph) PersistentVolume(name string) (*corev1.PersistentVolume, error) {
	for _, v := range g.pvs {
		if v.Name == name {
			return v, nil
		}
	}
	return nil, errNotFound
}

func testGraph() *graph {
	secretVolume := corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}}
	projected := corev1.Volume{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "projected-secret"}}},
	}}}}
	claim := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	scratch := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}
	web := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.PodSpec{
			NodeName:           "n1",
			ServiceAccountName: "web-sa",
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull-secret"}},
			InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env-secret"}}},
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env-config"}}},
			}}},
			Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-config"}, Key: "k"}}},
			}}},
			Volumes: []corev1.Volume{secretVolume, projected, claim, scratch},
		},
	}
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"},
		Spec: corev1.PodSpec{NodeName: "n2", ServiceAccountName: "other-sa", Volumes: []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "other-secret"}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "other-data"}}},
		}},
	}
	mirror := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mirror", Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "mirror-sa", Volumes: []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "mirror-secret"}}},
		}},
	}
	pending := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pending"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "pending-secret"}}},
		}},
	}
	return &graph{
		pods: []*corev1.Pod{web, other, mirror, pending},
		pvcs: []*corev1.PersistentVolumeClaim{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-data"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other-data"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-other"}},
		},
		pvs: []*corev1.PersistentVolume{
			{ObjectMeta: metav1.ObjectMeta{Name: "pv-data"}, Spec: corev1.PersistentVolumeSpec{
				ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "data"},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver:                     "d",
					NodePublishSecretRef:       &corev1.SecretReference{Namespace: "storage", Name: "csi-publish"},
					ControllerPublishSecretRef: &corev1.SecretReference{Namespace: "storage", Name: "csi-controller"},
				}},
			}},
			{ObjectMeta: metav1.ObjectMeta{Name: "pv-other"}, Spec: corev1.PersistentVolumeSpec{
				ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "other-data"},
			}},
			{ObjectMeta: metav1.ObjectMeta{Name: "pv-unbound"}},
		},
	}
}

// nodeRules stand in for the bootstrap policy's system:node rules.
var nodeRules = []rbacv1.PolicyRule{
	{Verbs: []string{"create", "update", "patch"}, APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}},
	{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"services"}},
}

func TestAuthorize(t *testing.T) {
	n1 := authorizer.User{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	get := func(resource, ns, name string) authorizer.Attributes {
		return authorizer.Attributes{User: n1, Verb: "get", ResourceRequest: true, APIVersion: "v1", Resource: resource, Namespace: ns, Name: name}
	}
	with := func(a authorizer.Attributes, change func(*authorizer.Attributes)) authorizer.Attributes {
		change(&a)
		return a
	}
	verb := func(v string) func(*authorizer.Attributes) { return func(a *authorizer.Attributes) { a.Verb = v } }
	sub := func(verb, s string) func(*authorizer.Attributes) {
		return func(a *authorizer.Attributes) { a.Verb, a.Subresource = verb, s }
	}
	nodeSelector := func(verb, node string) func(*authorizer.Attributes) {
		return func(a *authorizer.Attributes) {
			a.Verb = verb
			a.FieldSelector = fields.Requirements{{Operator: selection.Equals, Field: "spec.nodeName", Value: node}}
		}
	}
	lease := func(v, ns, name string) authorizer.Attributes {
		return authorizer.Attributes{User: n1, Verb: v, ResourceRequest: true, APIGroup: "coordination.k8s.io", APIVersion: "v1", Resource: "leases", Namespace: ns, Name: name}
	}
	const unrelated = "no relationship found between node 'n1' and this object"
	cases := []struct {
		name   string
		attrs  authorizer.Attributes
		want   authorizer.Decision
		reason string
	}{
		{"not a node", with(get("secrets", "ns", "vol-secret"), func(a *authorizer.Attributes) { a.User = authorizer.User{Name: "jane"} }), authorizer.NoOpinion, ""},
		{"node name without the nodes group", with(get("secrets", "ns", "vol-secret"), func(a *authorizer.Attributes) { a.User.Groups = nil }), authorizer.NoOpinion, ""},
		{"a node without a name", with(get("secrets", "ns", "vol-secret"), func(a *authorizer.Attributes) { a.User.Name = "system:node:" }), authorizer.NoOpinion, `unknown node for user "system:node:"`},

		{"secret volume", get("secrets", "ns", "vol-secret"), authorizer.Allow, ""},
		{"projected secret", get("secrets", "ns", "projected-secret"), authorizer.Allow, ""},
		{"env secret", get("secrets", "ns", "env-secret"), authorizer.Allow, ""},
		{"init container envFrom secret", get("secrets", "ns", "init-env-secret"), authorizer.Allow, ""},
		{"image pull secret", get("secrets", "ns", "pull-secret"), authorizer.Allow, ""},
		{"watch of one secret", with(get("secrets", "ns", "vol-secret"), verb("watch")), authorizer.Allow, ""},
		{"secret of the same name elsewhere", get("secrets", "other-ns", "vol-secret"), authorizer.NoOpinion, unrelated},
		{"another node's secret", get("secrets", "ns", "other-secret"), authorizer.NoOpinion, unrelated},
		{"a mirror pod's secret", get("secrets", "ns", "mirror-secret"), authorizer.NoOpinion, unrelated},
		{"an unscheduled pod's secret", get("secrets", "ns", "pending-secret"), authorizer.NoOpinion, unrelated},
		{"a secret by the volume of a pod's claim", get("secrets", "storage", "csi-publish"), authorizer.Allow, ""},
		{"a controller's secret of that volume", get("secrets", "storage", "csi-controller"), authorizer.NoOpinion, unrelated},
		{"list of every secret", with(get("secrets", "ns", ""), verb("list")), authorizer.NoOpinion, "No Object name found"},
		{"secrets across namespaces", with(get("secrets", "", "vol-secret"), verb("list")), authorizer.NoOpinion, "can only read namespaced object of this type"},
		{"update a secret", with(get("secrets", "ns", "vol-secret"), verb("update")), authorizer.NoOpinion, "can only read resources of this type"},
		{"a secret's subresource", with(get("secrets", "ns", "vol-secret"), sub("get", "x")), authorizer.NoOpinion, "cannot read subresource"},

		{"projected config map", get("configmaps", "ns", "kube-root-ca.crt"), authorizer.Allow, ""},
		{"env config map", get("configmaps", "ns", "env-config"), authorizer.Allow, ""},
		{"envFrom config map", get("configmaps", "ns", "init-env-config"), authorizer.Allow, ""},
		{"unrelated config map", get("configmaps", "ns", "vol-secret"), authorizer.NoOpinion, unrelated},

		{"claim", get("persistentvolumeclaims", "ns", "data"), authorizer.Allow, ""},
		{"ephemeral volume's claim", get("persistentvolumeclaims", "ns", "web-scratch"), authorizer.Allow, ""},
		{"another node's claim", get("persistentvolumeclaims", "ns", "other-data"), authorizer.NoOpinion, unrelated},
		{"list claims", with(get("persistentvolumeclaims", "ns", "data"), verb("list")), authorizer.NoOpinion, "can only get individual resources of this type"},
		{"claim status", with(get("persistentvolumeclaims", "ns", "data"), sub("patch", "status")), authorizer.Allow, ""},
		{"read claim status", with(get("persistentvolumeclaims", "ns", "data"), sub("get", "status")), authorizer.NoOpinion, "can only get/update/patch this type"},
		{"volume bound to a pod's claim", get("persistentvolumes", "", "pv-data"), authorizer.Allow, ""},
		{"volume of another node's claim", get("persistentvolumes", "", "pv-other"), authorizer.NoOpinion, unrelated},
		{"unbound volume", get("persistentvolumes", "", "pv-unbound"), authorizer.NoOpinion, unrelated},
		{"missing volume", get("persistentvolumes", "", "pv-missing"), authorizer.NoOpinion, unrelated},

		{"token for a pod's service account", with(get("serviceaccounts", "ns", "web-sa"), sub("create", "token")), authorizer.Allow, ""},
		{"token for another node's pod's service account", with(get("serviceaccounts", "ns", "other-sa"), sub("create", "token")), authorizer.NoOpinion, unrelated},
		{"token for a mirror pod's service account", with(get("serviceaccounts", "ns", "mirror-sa"), sub("create", "token")), authorizer.NoOpinion, unrelated},
		{"read a service account", get("serviceaccounts", "ns", "web-sa"), authorizer.NoOpinion, "can only create tokens for individual service accounts"},
		{"create a service account", with(get("serviceaccounts", "ns", "web-sa"), verb("create")), authorizer.NoOpinion, "can only create token subresource of serviceaccount"},

		{"own lease", lease("update", "kube-node-lease", "n1"), authorizer.Allow, ""},
		{"create a lease", lease("create", "kube-node-lease", ""), authorizer.Allow, ""},
		{"another node's lease", lease("get", "kube-node-lease", "n2"), authorizer.NoOpinion, "can only access node lease with the same name as the requesting node"},
		{"a lease elsewhere", lease("get", "kube-system", "n1"), authorizer.NoOpinion, `can only access leases in the "kube-node-lease" system namespace`},
		{"list leases", lease("list", "kube-node-lease", ""), authorizer.NoOpinion, "can only get, create, update, patch, or delete a node lease"},

		{"own node", get("nodes", "", "n1"), authorizer.Allow, ""},
		{"watch own node", with(get("nodes", "", "n1"), verb("watch")), authorizer.Allow, ""},
		{"another node", get("nodes", "", "n2"), authorizer.NoOpinion, "node 'n1' cannot read 'n2', only its own Node object"},
		{"every node, for routes to their pods", with(get("nodes", "", ""), verb("list")), authorizer.Allow, ""},
		{"watch every node", with(get("nodes", "", ""), verb("watch")), authorizer.Allow, ""},
		{"write a node", with(get("nodes", "", "n2"), verb("patch")), authorizer.Allow, ""},
		{"node status", with(get("nodes", "", "n1"), sub("update", "status")), authorizer.Allow, ""},
		{"delete a node", with(get("nodes", "", "n1"), verb("delete")), authorizer.NoOpinion, ""},

		{"own pods", with(get("pods", "", ""), nodeSelector("watch", "n1")), authorizer.Allow, ""},
		{"another node's pods", with(get("pods", "", ""), nodeSelector("list", "n2")), authorizer.NoOpinion, "can only list/watch pods with spec.nodeName field selector"},
		{"every pod", with(get("pods", "", ""), verb("list")), authorizer.NoOpinion, "can only list/watch pods with spec.nodeName field selector"},
		{"own pod", get("pods", "ns", "web"), authorizer.Allow, ""},
		{"own mirror pod", get("pods", "ns", "mirror"), authorizer.Allow, ""},
		{"watch of one own pod", with(get("pods", "ns", "web"), verb("watch")), authorizer.Allow, ""},
		{"another node's pod", get("pods", "ns", "other"), authorizer.NoOpinion, unrelated},
		{"pod status", with(get("pods", "ns", "other"), sub("patch", "status")), authorizer.Allow, ""},
		{"eviction", with(get("pods", "ns", "other"), sub("create", "eviction")), authorizer.Allow, ""},
		{"delete a pod", with(get("pods", "ns", "other"), verb("delete")), authorizer.Allow, ""},
		{"exec into a pod", with(get("pods", "ns", "web"), sub("create", "exec")), authorizer.NoOpinion, ""},

		{"node rules", authorizer.Attributes{User: n1, Verb: "create", ResourceRequest: true, APIGroup: "events.k8s.io", APIVersion: "v1", Namespace: "ns", Resource: "events"}, authorizer.Allow, ""},
		{"node rules, cluster-wide", with(get("services", "", ""), verb("watch")), authorizer.Allow, ""},
		{"not in the node rules", with(get("namespaces", "", ""), verb("create")), authorizer.NoOpinion, ""},
		{"paths are left to the node rules", authorizer.Attributes{User: n1, Verb: "get", Path: "/healthz"}, authorizer.NoOpinion, ""},
	}
	a := New(testGraph(), nodeRules)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(t.Context(), tc.attrs)
			if err != nil {
				t.Fatalf("Authorize: %v", err)
			}
			if d != tc.want || reason != tc.reason {
				t.Errorf("got %v %q, want %v %q", d, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestRulesFor(t *testing.T) {
	a := New(testGraph(), nodeRules)
	cases := []struct {
		user           authorizer.User
		wantIncomplete bool
		wantErr        bool
	}{
		{authorizer.User{Name: "system:node:n1", Groups: []string{"system:nodes"}}, true, true},
		{authorizer.User{Name: "jane"}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.user.Name, func(t *testing.T) {
			resource, nonResource, incomplete, err := a.RulesFor(t.Context(), tc.user, "ns")
			if len(resource) != 0 || len(nonResource) != 0 {
				t.Errorf("rules %v %v, want none", resource, nonResource)
			}
			if incomplete != tc.wantIncomplete || (err != nil) != tc.wantErr {
				t.Errorf("incomplete %v, err %v; want %v, error %v", incomplete, err, tc.wantIncomplete, tc.wantErr)
			}
		})
	}
}

func TestPodReferences(t *testing.T) {
	g := testGraph()
	web := g.pods[0]
	if diff := cmp.Diff([]string{"pull-secret", "init-env-secret", "env-secret", "vol-secret", "projected-secret"}, podSecretNames(web)); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"init-env-config", "env-config", "kube-root-ca.crt"}, podConfigMapNames(web)); diff != "" {
		t.Errorf("config maps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"data", "web-scratch"}, podClaimNames(web)); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
}

func TestPVSecretRefs(t *testing.T) {
	ns := "secrets-ns"
	cases := []struct {
		name string
		pv   corev1.PersistentVolumeSpec
		want []secretRef
	}{
		{"defaults to the claim's namespace", corev1.PersistentVolumeSpec{
			ClaimRef:               &corev1.ObjectReference{Namespace: "claims", Name: "c"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{RBD: &corev1.RBDPersistentVolumeSource{SecretRef: &corev1.SecretReference{Name: "rbd"}}},
		}, []secretRef{{"claims", "rbd"}}},
		{"a namespace given wins", corev1.PersistentVolumeSpec{
			ClaimRef:               &corev1.ObjectReference{Namespace: "claims", Name: "c"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{AzureFile: &corev1.AzureFilePersistentVolumeSource{SecretName: "az", SecretNamespace: &ns}},
		}, []secretRef{{"secrets-ns", "az"}}},
		{"CSI secrets a kubelet uses", corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				ControllerPublishSecretRef: &corev1.SecretReference{Namespace: "a", Name: "controller-publish"},
				NodeStageSecretRef:         &corev1.SecretReference{Namespace: "a", Name: "stage"},
				NodePublishSecretRef:       &corev1.SecretReference{Namespace: "a", Name: "publish"},
				ControllerExpandSecretRef:  &corev1.SecretReference{Namespace: "a", Name: "controller-expand"},
				NodeExpandSecretRef:        &corev1.SecretReference{Namespace: "a", Name: "expand"},
			}},
		}, []secretRef{{"a", "stage"}, {"a", "publish"}, {"a", "expand"}}},
		{"no secrets", corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}},
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := pvSecretRefs(&corev1.PersistentVolume{Spec: tc.pv})
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(secretRef{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
