package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// TestNodeCredentialInCluster uses the node's own kubeconfig, as the kubelet does: the Node
// authorizer refuses it namespaces and Secrets no pod on the node uses, and lets it read the
// Secret of a pod bound to it.
func TestNodeCredentialInCluster(t *testing.T) {
	c := requireMakeUp(t)
	requireDocker(t)
	ns := c.namespace(t, "e2e-nodeauthz")
	for name, value := range map[string]string{"mounted": "for the pod", "unrelated": "for nobody"} {
		create[*corev1.Secret, *corev1.SecretList](t, c, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: map[string]string{"value": value}})
	}
	create[*corev1.Pod, *corev1.PodList](t, c, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secret-user"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "pause", Image: "minik8s/pause:1.0", ImagePullPolicy: corev1.PullIfNotPresent,
				VolumeMounts: []corev1.VolumeMount{{Name: "secret", MountPath: "/etc/mounted", ReadOnly: true}}}},
			Volumes: []corev1.Volume{{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "mounted"}}}},
		},
	})
	// Running means the kubelet read the Secret with the node's credential.
	node := c.waitPodRunning(t, ns, "secret-user").Spec.NodeName
	nodeKubeconfig := filepath.Join(filepath.Dir(c.kubeconfig), "kubeconfigs", "node-"+node+".kubeconfig")
	if _, err := os.Stat(nodeKubeconfig); err != nil {
		t.Fatalf("the node %s's kubeconfig: %v", node, err)
	}
	user := "system:node:" + node

	t.Run("the API's answers", func(t *testing.T) {
		cfg, err := client.FromKubeconfig(nodeKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.MustFor[*corev1.Namespace, *corev1.NamespaceList](cl).Create(t.Context(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-by-node"}}, metav1.CreateOptions{})
		wantForbidden(t, "create namespace", err, `namespaces is forbidden: User "`+user+`" cannot create resource "namespaces" in API group "" at the cluster scope`)
		secrets := client.MustFor[*corev1.Secret, *corev1.SecretList](cl)
		_, err = secrets.Get(t.Context(), ns, "unrelated", metav1.GetOptions{})
		wantForbidden(t, "get secret unrelated", err, `secrets "unrelated" is forbidden: User "`+user+`" cannot get resource "secrets" in API group "" in the namespace "`+ns+`"`)
		s, err := secrets.Get(t.Context(), ns, "mounted", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the node may not read the Secret its pod mounts: %v", err)
		}
		if got := string(s.Data["value"]); got != "for the pod" {
			t.Errorf("the Secret read by the node holds %q", got)
		}
	})

	t.Run("both kubectls", func(t *testing.T) {
		nsFile := filepath.Join(t.TempDir(), "ns.yaml")
		writeFile(t, nsFile, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"-by-node\n")
		for _, k := range c.kubectls(t) {
			k.kubeconfig = nodeKubeconfig
			refused := func(what, want string, args ...string) {
				t.Helper()
				r := k.run(t, args...)
				if r.err == nil || !strings.HasPrefix(r.stderr, "Error from server (Forbidden): ") || !strings.Contains(r.stderr, want) {
					t.Errorf("%s kubectl %s as %s:\n%s\nwant a Forbidden error saying %q", k.name, what, user, r, want)
				}
			}
			refused("create namespace", `namespaces is forbidden: User "`+user+`" cannot create resource "namespaces" in API group "" at the cluster scope`,
				"create", "-f", nsFile)
			refused("get secret unrelated", `secrets "unrelated" is forbidden: User "`+user+`" cannot get resource "secrets" in API group "" in the namespace "`+ns+`"`,
				"get", "secret", "unrelated", "-n", ns)
			// "for the pod", base64.
			if got := k.ok(t, "get", "secret", "mounted", "-n", ns, "-o", "jsonpath={.data.value}").stdout; got != "Zm9yIHRoZSBwb2Q=" {
				t.Errorf("%s kubectl get secret mounted as %s: %q", k.name, user, got)
			}
		}
	})
}

// wantForbidden checks that err is the API's 403 and its message begins with want (the Node
// authorizer may add why).
func wantForbidden(t *testing.T, what string, err error, want string) {
	t.Helper()
	st := apierrorStatus(err)
	if st == nil || st.Code != 403 || st.Reason != metav1.StatusReasonForbidden || !strings.HasPrefix(st.Message, want) {
		t.Errorf("%s: %v (status %s), want 403 Forbidden %q", what, err, dump(st), want)
	}
}

// TestRBACEscalationRefused: a ServiceAccount that may create Roles in its namespace may
// create one granting what it holds, and is refused one granting more (secrets), with
// Kubernetes' 403, whether it acts through impersonation or its own token.
func TestRBACEscalationRefused(t *testing.T) {
	c := requireMakeUp(t)
	ns := c.namespace(t, "e2e-escalate")
	create[*corev1.ServiceAccount, *corev1.ServiceAccountList](t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "role-maker"}})
	create[*rbacv1.Role, *rbacv1.RoleList](t, c, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "role-maker"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, Verbs: []string{"create"}}},
	})
	create[*rbacv1.RoleBinding, *rbacv1.RoleBindingList](t, c, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "role-maker"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "role-maker"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "role-maker"},
	})
	sa := "system:serviceaccount:" + ns + ":role-maker"
	ks := c.kubectls(t)
	// The authorizer reads bindings from its informers, a moment behind the write.
	eventually(t, 30*time.Second, "the binding to take effect", func() bool {
		return ks[0].run(t, "auth", "can-i", "create", "roles.rbac.authorization.k8s.io", "-n", ns, "--as", sa).stdout == "yes\n"
	})
	token := strings.TrimSpace(ks[0].ok(t, "create", "token", "role-maker", "-n", ns, "--duration", "10m").stdout)
	roles := client.MustFor[*rbacv1.Role, *rbacv1.RoleList](c.cl)

	for _, k := range ks {
		for _, as := range []struct {
			name string
			args []string
		}{{"as", []string{"--as", sa}}, {"token", []string{"--token", token}}} {
			t.Run(k.name+" kubectl "+as.name, func(t *testing.T) {
				held := "held-" + k.name + "-" + as.name
				k.ok(t, append([]string{"create", "role", held, "--verb=create", "--resource=roles.rbac.authorization.k8s.io", "-n", ns}, as.args...)...)

				more := "more-" + k.name + "-" + as.name
				r := k.run(t, append([]string{"create", "role", more, "--verb=get", "--resource=secrets", "-n", ns}, as.args...)...)
				want := `Error from server (Forbidden): roles.rbac.authorization.k8s.io "` + more + `" is forbidden: user "` + sa +
					`" (groups=["system:serviceaccounts" "system:serviceaccounts:` + ns + `" "system:authenticated"]) ` +
					"is attempting to grant RBAC permissions not currently held:\n" + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`
				if r.err == nil || !strings.HasPrefix(r.stderr, want) {
					t.Errorf("creating a Role that grants secrets:\n%s\nwant stderr beginning %q", r, want)
				}
				if _, err := roles.Get(t.Context(), ns, more, metav1.GetOptions{}); apierrorStatus(err) == nil || apierrorStatus(err).Code != 404 {
					t.Errorf("the refused Role %s: get says %v, want NotFound", more, err)
				}
			})
		}
	}
}

// apierrorStatus is the Status the apiserver answered err with, nil when err is not one.
func apierrorStatus(err error) *metav1.Status {
	var e *apierror.Error
	if !errors.As(err, &e) {
		return nil
	}
	return &e.Status
}
