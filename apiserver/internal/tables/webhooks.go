package tables

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValidatingWebhookConfiguration and MutatingWebhookConfiguration are how kubectl get shows
// webhook configurations: their name, how many webhooks they hold, and their age.
var (
	ValidatingWebhookConfiguration = NewPrinter(webhookColumns, func(c *admissionregistrationv1.ValidatingWebhookConfiguration, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{c.Name, int64(len(c.Webhooks)), age(c.CreationTimestamp, now)}}
	})
	MutatingWebhookConfiguration = NewPrinter(webhookColumns, func(c *admissionregistrationv1.MutatingWebhookConfiguration, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{c.Name, int64(len(c.Webhooks)), age(c.CreationTimestamp, now)}}
	})
)

var webhookColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
	ageColumn,
}
