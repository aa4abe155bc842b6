package noderestriction

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/apiserver/internal/authorizer"
	"minik8s.io/shared/apierror"
)

var n1 = authorizer.User{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}

func pod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}, Spec: corev1.PodSpec{NodeName: node}}
}

func getPod(namespace, name string) (*corev1.Pod, error) {
	for _, p := range []*corev1.Pod{pod("mine", "n1"), pod("theirs", "n2")} {
		if p.Namespace == namespace && p.Name == name {
			return p, nil
		}
	}
	if name == "broken" {
		return nil, errors.New("cache not synced")
	}
	return nil, apierror.NotFound("", "pods", name)
}

func nodeObj(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func labelled(p *corev1.Pod, labels map[string]string) *corev1.Pod {
	p.Labels = labels
	return p
}

func tokenRequest(kind, name, uid string) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: kind, Name: name, UID: types.UID(uid)},
	}}
}

func lease(name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: name}}
}

var (
	pods        = schema.GroupResource{Resource: "pods"}
	nodes       = schema.GroupResource{Resource: "nodes"}
	leases      = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	accounts    = schema.GroupResource{Resource: "serviceaccounts"}
	claims      = schema.GroupResource{Resource: "persistentvolumeclaims"}
	configMaps  = schema.GroupResource{Resource: "configmaps"}
	noSchedule  = corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}
	create      = admissionv1.Create
	update      = admissionv1.Update
	deleteOp    = admissionv1.Delete
	connect     = admissionv1.Connect
	mirrorNotes = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
)

func TestAdmit(t *testing.T) {
	mirror := pod("static", "n1")
	mirror.Annotations = mirrorNotes
	claim := func(capacity string, labels map[string]string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", Labels: labels, ResourceVersion: capacity}}
		c.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimResizing, Reason: capacity}}
		return c
	}
	cases := []struct {
		name string
		req  Request
		want string // the refusal's message, "" when admitted
	}{
		{name: "not a node", req: Request{User: authorizer.User{Name: "jane"}, Operation: create, Resource: nodes, Name: "n2", Object: nodeObj("n2", nil)}},
		{name: "a node without a name", req: Request{User: authorizer.User{Name: "system:node:", Groups: []string{"system:nodes"}}, Operation: update, Resource: configMaps, Namespace: "ns", Name: "c"},
			want: `configmaps "c" is forbidden: could not determine node from user "system:node:"`},
		{name: "connect is not restricted", req: Request{User: n1, Operation: connect, Resource: pods, Subresource: "exec", Namespace: "ns", Name: "theirs"}},
		{name: "other resources are not restricted", req: Request{User: n1, Operation: create, Resource: configMaps, Namespace: "ns", Name: "c"}},

		// Nodes.
		{name: "create own node", req: Request{User: n1, Operation: create, Resource: nodes, Name: "n1",
			Object: nodeObj("n1", map[string]string{"kubernetes.io/hostname": "n1", "node.kubernetes.io/instance-type": "m", "kubelet.kubernetes.io/x": "y", "example.com/team": "a"}, noSchedule)}},
		{name: "create another node", req: Request{User: n1, Operation: create, Resource: nodes, Name: "n2", Object: nodeObj("n2", nil)},
			want: `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},
		{name: "update another node", req: Request{User: n1, Operation: update, Resource: nodes, Subresource: "status", Name: "n2", Object: nodeObj("n2", nil), OldObject: nodeObj("n2", nil)},
			want: `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},
		{name: "delete another node", req: Request{User: n1, Operation: deleteOp, Resource: nodes, Name: "n2"},
			want: `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},
		{name: "delete own node", req: Request{User: n1, Operation: deleteOp, Resource: nodes, Name: "n1"}},
		{name: "create with restricted labels", req: Request{User: n1, Operation: create, Resource: nodes, Name: "n1",
			Object: nodeObj("n1", map[string]string{"node-restriction.kubernetes.io/pool": "gpu", "kubernetes.io/role": "master", "foo.k8s.io/x": "y", "kubernetes.io/hostname": "n1"})},
			want: `nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: foo.k8s.io/x, kubernetes.io/role, node-restriction.kubernetes.io/pool`},
		{name: "update own labels outside the reserved ones", req: Request{User: n1, Operation: update, Resource: nodes, Name: "n1",
			Object: nodeObj("n1", map[string]string{"example.com/a": "2", "node.kubernetes.io/b": "1"}), OldObject: nodeObj("n1", map[string]string{"example.com/a": "1"})}},
		{name: "update keeps a reserved label as it was", req: Request{User: n1, Operation: update, Resource: nodes, Name: "n1",
			Object: nodeObj("n1", map[string]string{"node-restriction.kubernetes.io/pool": "gpu", "example.com/a": "2"}), OldObject: nodeObj("n1", map[string]string{"node-restriction.kubernetes.io/pool": "gpu"})}},
		{name: "update removes a reserved label", req: Request{User: n1, Operation: update, Resource: nodes, Name: "n1",
			Object: nodeObj("n1", nil), OldObject: nodeObj("n1", map[string]string{"sub.node-restriction.kubernetes.io/pool": "gpu"})},
			want: `nodes "n1" is forbidden: is not allowed to modify labels: sub.node-restriction.kubernetes.io/pool`},
		{name: "update own taints", req: Request{User: n1, Operation: update, Resource: nodes, Name: "n1",
			Object: nodeObj("n1", nil), OldObject: nodeObj("n1", nil, noSchedule)},
			want: `nodes "n1" is forbidden: node "n1" is not allowed to modify taints`},

		// Pods.
		{name: "create a pod", req: Request{User: n1, Operation: create, Resource: pods, Namespace: "ns", Name: "p", Object: pod("p", "n1")},
			want: `pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods`},
		{name: "create a mirror pod", req: Request{User: n1, Operation: create, Resource: pods, Namespace: "ns", Name: "static", Object: mirror},
			want: `pods "static" is forbidden: node "n1" can not create mirror pods: this cluster has no static pods`},
		{name: "create a pod with a generated name", req: Request{User: n1, Operation: create, Resource: pods, Namespace: "ns",
			Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}}},
			want: `pods "web-" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods`},
		{name: "delete own pod", req: Request{User: n1, Operation: deleteOp, Resource: pods, Namespace: "ns", Name: "mine"}},
		{name: "delete another node's pod", req: Request{User: n1, Operation: deleteOp, Resource: pods, Namespace: "ns", Name: "theirs"},
			want: `pods "theirs" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself`},
		{name: "delete a missing pod", req: Request{User: n1, Operation: deleteOp, Resource: pods, Namespace: "ns", Name: "gone"},
			want: `pods "gone" not found`},
		{name: "delete when pods cannot be read", req: Request{User: n1, Operation: deleteOp, Resource: pods, Namespace: "ns", Name: "broken"},
			want: `pods "broken" is forbidden: cache not synced`},
		{name: "update a pod", req: Request{User: n1, Operation: update, Resource: pods, Namespace: "ns", Name: "mine", Object: pod("mine", "n1"), OldObject: pod("mine", "n1")},
			want: `pods "mine" is forbidden: unexpected operation "UPDATE", node "n1" can only create and delete mirror pods`},
		{name: "own pod's status", req: Request{User: n1, Operation: update, Resource: pods, Subresource: "status", Namespace: "ns", Name: "mine", Object: pod("mine", "n1"), OldObject: pod("mine", "n1")}},
		{name: "another node's pod's status", req: Request{User: n1, Operation: update, Resource: pods, Subresource: "status", Namespace: "ns", Name: "theirs", Object: pod("theirs", "n1"), OldObject: pod("theirs", "n2")},
			want: `pods "theirs" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself`},
		{name: "labels through status", req: Request{User: n1, Operation: update, Resource: pods, Subresource: "status", Namespace: "ns", Name: "mine",
			Object: labelled(pod("mine", "n1"), map[string]string{"a": "b"}), OldObject: pod("mine", "n1")},
			want: `pods "mine" is forbidden: node "n1" cannot update labels through pod status`},
		{name: "evict own pod", req: Request{User: n1, Operation: create, Resource: pods, Subresource: "eviction", Namespace: "ns", Name: "mine", Object: &policyv1.Eviction{}}},
		{name: "evict by the URL's name, not the body's", req: Request{User: n1, Operation: create, Resource: pods, Subresource: "eviction", Namespace: "ns", Name: "theirs",
			Object: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}},
			want: `pods "theirs" is forbidden: node n1 can only evict pods with spec.nodeName set to itself`},
		{name: "evict named by the body", req: Request{User: n1, Operation: create, Resource: pods, Subresource: "eviction", Namespace: "ns",
			Object: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}},
			want: `pods "theirs" is forbidden: node n1 can only evict pods with spec.nodeName set to itself`},
		{name: "evict nothing named", req: Request{User: n1, Operation: create, Resource: pods, Subresource: "eviction", Namespace: "ns", Object: &policyv1.Eviction{}},
			want: `pods "Unknown" is forbidden: could not determine pod from request data`},
		{name: "another pod subresource", req: Request{User: n1, Operation: create, Resource: pods, Subresource: "binding", Namespace: "ns", Name: "mine"},
			want: `pods "mine" is forbidden: unexpected pod subresource "binding", only 'status' and 'eviction' are allowed`},

		// Tokens.
		{name: "token for own pod", req: Request{User: n1, Operation: create, Resource: accounts, Subresource: "token", Namespace: "ns", Name: "default", Object: tokenRequest("Pod", "mine", "uid-mine")}},
		{name: "token for another node's pod", req: Request{User: n1, Operation: create, Resource: accounts, Subresource: "token", Namespace: "ns", Name: "default", Object: tokenRequest("Pod", "theirs", "uid-theirs")},
			want: `serviceaccounts "default" is forbidden: node requested token bound to a pod scheduled on a different node`},
		{name: "token for a recreated pod", req: Request{User: n1, Operation: create, Resource: accounts, Subresource: "token", Namespace: "ns", Name: "default", Object: tokenRequest("Pod", "mine", "old")},
			want: `serviceaccounts "default" is forbidden: the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated`},
		{name: "token without a uid", req: Request{User: n1, Operation: create, Resource: accounts, Subresource: "token", Namespace: "ns", Name: "default", Object: tokenRequest("Pod", "mine", "")},
			want: `serviceaccounts "default" is forbidden: node requested token with a pod binding without a uid`},
		{name: "token bound to a secret", req: Request{User: n1, Operation: create, Resource: accounts, Subresource: "token", Namespace: "ns", Name: "default", Object: tokenRequest("Secret", "s", "u")},
			want: `serviceaccounts "default" is forbidden: node requested token not bound to a pod`},
		{name: "unbound token", req: Request{User: n1, Operation: create, Resource: accounts, Subresource: "token", Namespace: "ns", Name: "default", Object: &authenticationv1.TokenRequest{}},
			want: `serviceaccounts "default" is forbidden: node requested token not bound to a pod`},

		// Leases.
		{name: "create own lease", req: Request{User: n1, Operation: create, Resource: leases, Namespace: "kube-node-lease", Name: "n1", Object: lease("n1")}},
		{name: "create another node's lease", req: Request{User: n1, Operation: create, Resource: leases, Namespace: "kube-node-lease", Name: "n2", Object: lease("n2")},
			want: `leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node`},
		{name: "update another node's lease", req: Request{User: n1, Operation: update, Resource: leases, Namespace: "kube-node-lease", Name: "n2", Object: lease("n2"), OldObject: lease("n2")},
			want: `leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node`},
		{name: "a lease elsewhere", req: Request{User: n1, Operation: deleteOp, Resource: leases, Namespace: "kube-system", Name: "n1"},
			want: `leases.coordination.k8s.io "n1" is forbidden: can only access leases in the "kube-node-lease" system namespace`},

		// Claims.
		{name: "claim status conditions", req: Request{User: n1, Operation: update, Resource: claims, Subresource: "status", Namespace: "ns", Name: "data", Object: claim("2", nil), OldObject: claim("1", nil)}},
		{name: "claim labels through status", req: Request{User: n1, Operation: update, Resource: claims, Subresource: "status", Namespace: "ns", Name: "data", Object: claim("1", map[string]string{"a": "b"}), OldObject: claim("1", nil)},
			want: "prefix:" + `persistentvolumeclaims "data" is forbidden: node "n1" is not allowed to update fields other than status.capacity and status.conditions: `},
		{name: "claim itself", req: Request{User: n1, Operation: update, Resource: claims, Namespace: "ns", Name: "data", Object: claim("1", nil), OldObject: claim("1", nil)},
			want: `persistentvolumeclaims "data" is forbidden: may only update PVC status`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Admit(tc.req, getPod)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("admitted, want %q", tc.want)
			}
			if !errors.Is(err, apierror.ErrForbidden) && !errors.Is(err, apierror.ErrNotFound) {
				t.Errorf("error %v is neither Forbidden nor NotFound", err)
			}
			got := err.Error()
			if prefix, ok := strings.CutPrefix(tc.want, "prefix:"); ok {
				if !strings.HasPrefix(got, prefix) {
					t.Errorf("message %q, want it to start with %q", got, prefix)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForbiddenLabels(t *testing.T) {
	cases := []struct {
		name     string
		old, new map[string]string
		want     []string
	}{
		{"kubelet's own labels", nil, map[string]string{"kubernetes.io/hostname": "n", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "z", "node.kubernetes.io/instance-type": "t"}, nil},
		{"kubelet namespaces and their subdomains", nil, map[string]string{"kubelet.kubernetes.io/a": "1", "x.node.kubernetes.io/b": "2"}, nil},
		{"other domains", nil, map[string]string{"example.com/a": "1", "plain": "2"}, nil},
		{"reserved", nil, map[string]string{"node-restriction.kubernetes.io/a": "1", "node-role.kubernetes.io/master": "", "k8s.io/b": "2", "x.k8s.io/c": "3"},
			[]string{"k8s.io/b", "node-restriction.kubernetes.io/a", "node-role.kubernetes.io/master", "x.k8s.io/c"}},
		{"unchanged reserved labels are fine", map[string]string{"node-role.kubernetes.io/master": ""}, map[string]string{"node-role.kubernetes.io/master": ""}, nil},
		{"changed reserved labels are not", map[string]string{"node-role.kubernetes.io/master": ""}, map[string]string{"node-role.kubernetes.io/master": "x"}, []string{"node-role.kubernetes.io/master"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, forbiddenLabels(modifiedLabels(tc.new, tc.old))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
