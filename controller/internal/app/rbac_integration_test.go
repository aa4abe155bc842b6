package app

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/clusterroleaggregation"
	"minik8s.io/controller/internal/rootcacert"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// runControllers runs the controller-manager with the named controllers, under its own
// identity, against a fresh apiserver and returns the apiserver's home and an admin client.
func runControllers(t *testing.T, controllers ...string) (home string, admin *client.Client) {
	t.Helper()
	home, amqpURL, admin := startAPIServer(t)
	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-" + strings.Join(controllers, "-"),
		Controllers:            controllers,
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})
	return home, admin
}

// TestClusterRoleAggregation runs the aggregation controller against a real apiserver and
// RabbitMQ: an aggregated role gets the rules of the roles it selects, follows their changes
// and their labels, and loses the rules of a role deleted.
func TestClusterRoleAggregation(t *testing.T) {
	_, admin := runControllers(t, clusterroleaggregation.Name)
	roles := client.MustFor[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](admin)
	ctx := t.Context()
	label := map[string]string{"rbac.example.com/aggregate-to-it-monitoring": "true"}
	rule := func(verb, resource string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{resource}, Verbs: []string{verb}}
	}
	create := func(r *rbacv1.ClusterRole) {
		t.Helper()
		if _, err := roles.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create clusterrole %s: %v", r.Name, err)
		}
		t.Cleanup(func() {
			if err := roles.Delete(context.Background(), "", r.Name, metav1.DeleteOptions{}); err != nil && !errors.Is(err, apierror.ErrNotFound) {
				t.Logf("cleanup clusterrole %s: %v", r.Name, err)
			}
		})
	}
	rulesOf := func(name string, want ...rbacv1.PolicyRule) {
		t.Helper()
		waitUntil(t, "clusterrole "+name+" to aggregate its rules", func(ctx context.Context) (bool, error) {
			r, err := roles.Get(ctx, "", name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return equality.Semantic.DeepEqual(want, r.Rules), nil
		})
	}

	create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "it-monitoring"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: label}}}})
	create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "it-monitoring-pods", Labels: label},
		Rules: []rbacv1.PolicyRule{rule("get", "pods"), rule("list", "pods")}})
	create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "it-monitoring-nodes", Labels: label},
		Rules: []rbacv1.PolicyRule{rule("list", "pods"), rule("get", "nodes")}})
	create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "it-unrelated"}, Rules: []rbacv1.PolicyRule{rule("*", "secrets")}})
	// By the selected roles' names, each rule once.
	rulesOf("it-monitoring", rule("list", "pods"), rule("get", "nodes"), rule("get", "pods"))

	nodes, err := roles.Get(ctx, "", "it-monitoring-nodes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes.Rules = append(nodes.Rules, rule("watch", "nodes"))
	if _, err := roles.Update(ctx, nodes, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesOf("it-monitoring", rule("list", "pods"), rule("get", "nodes"), rule("watch", "nodes"), rule("get", "pods"))

	unrelated, err := roles.Get(ctx, "", "it-unrelated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unrelated.Labels = label
	if _, err := roles.Update(ctx, unrelated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesOf("it-monitoring", rule("list", "pods"), rule("get", "nodes"), rule("watch", "nodes"), rule("get", "pods"), rule("*", "secrets"))

	if err := roles.Delete(ctx, "", "it-monitoring-nodes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesOf("it-monitoring", rule("get", "pods"), rule("list", "pods"), rule("*", "secrets"))
}

// TestRootCACertPublisher runs the publisher against a real apiserver and RabbitMQ: a new
// namespace gets kube-root-ca.crt with the CA of the controller-manager's kubeconfig, which is
// put back when changed or deleted.
func TestRootCACertPublisher(t *testing.T) {
	home, admin := runControllers(t, rootcacert.Name)
	ccfg, err := client.FromKubeconfig(filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ccfg.CAData) == 0 {
		t.Fatal("the controller-manager's kubeconfig names no CA")
	}
	namespaces := client.MustFor[*corev1.Namespace, *corev1.NamespaceList](admin)
	cms := client.MustFor[*corev1.ConfigMap, *corev1.ConfigMapList](admin)
	ctx := t.Context()
	const ns = "it-root-ca"
	if _, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = namespaces.Delete(context.Background(), "", ns, metav1.DeleteOptions{}) })
	published := func(what string) *corev1.ConfigMap {
		t.Helper()
		var cm *corev1.ConfigMap
		waitUntil(t, what, func(ctx context.Context) (bool, error) {
			var err error
			cm, err = cms.Get(ctx, ns, rootcacert.ConfigMapName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return cm.Data[rootcacert.DataKey] == string(ccfg.CAData) && len(cm.Data) == 1 &&
				cm.Annotations[rootcacert.DescriptionAnnotation] == rootcacert.Description, nil
		})
		return cm
	}
	// Namespaces there before the controller started are published too.
	for _, system := range []string{"default", "kube-system"} {
		waitUntil(t, "kube-root-ca.crt in "+system, func(ctx context.Context) (bool, error) {
			_, err := cms.Get(ctx, system, rootcacert.ConfigMapName, metav1.GetOptions{})
			return err == nil, err
		})
	}
	cm := published("kube-root-ca.crt in a new namespace")

	cm.Data[rootcacert.DataKey] = "forged"
	cm.Data["extra"] = "x"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm = published("kube-root-ca.crt reset after a change")

	if err := cms.Delete(ctx, ns, rootcacert.ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := published("kube-root-ca.crt back after its deletion")
	if again.UID == cm.UID {
		t.Error("the ConfigMap was not deleted")
	}
}
