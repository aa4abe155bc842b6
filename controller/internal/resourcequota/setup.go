package resourcequota

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/quota"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
	"minik8s.io/shared/scheme"
)

// Resync is how often every quota is recounted whatever the events said, as Kubernetes'
// --resource-quota-sync-period.
const Resync = 5 * time.Minute

// typed are the resources whose usage reads more than their metadata.
var typed = map[string]bool{"pods": true, "services": true, "persistentvolumeclaims": true}

// Setup builds the controller from the controller-manager's configuration and parts: it
// counts every namespaced resource a quota may limit.
func Setup(c *setup.Context) run.Runnable {
	counted := map[schema.GroupResource]*informer.Informer{}
	for _, res := range scheme.Resources {
		gr := res.GVR().GroupResource()
		if !res.Namespaced || quota.Ignored(gr) || res.Plural == "resourcequotas" {
			continue
		}
		if typed[res.Plural] {
			counted[gr] = c.Informers.For(res.Plural, nil)
		} else {
			counted[gr] = c.Informers.MetadataFor(res.Plural, nil)
		}
	}
	return New(Config{
		Quotas:  c.Informers.For("resourcequotas", nil),
		Counted: counted,
		Writer:  client.MustFor[*corev1.ResourceQuota, *corev1.ResourceQuotaList](c.Client),
		Options: reconcile.Options{Logger: c.Logger, Resync: Resync},
	})
}
