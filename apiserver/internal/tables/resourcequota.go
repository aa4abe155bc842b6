package tables

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceQuota is how kubectl get shows ResourceQuotas: used/hard of each resource, limits.*
// under LIMIT and the others under REQUEST.
var ResourceQuota = NewPrinter(resourceQuotaColumns, resourceQuotaRow)

var resourceQuotaColumns = []metav1.TableColumnDefinition{
	nameColumn,
	ageColumn,
	{Name: "Request", Type: "string", Description: "Request represents a minimum amount of cpu/memory that a container may consume."},
	{Name: "Limit", Type: "string", Description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."},
}

func resourceQuotaRow(q *corev1.ResourceQuota, now time.Time) metav1.TableRow {
	names := make([]corev1.ResourceName, 0, len(q.Status.Hard))
	for name := range q.Status.Hard {
		names = append(names, name)
	}
	slices.Sort(names)
	var requests, limits []string
	for _, name := range names {
		used, hard := q.Status.Used[name], q.Status.Hard[name]
		cell := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if prefix, _, ok := strings.Cut(string(name), "."); ok && prefix == "limits" {
			limits = append(limits, cell)
		} else {
			requests = append(requests, cell)
		}
	}
	return metav1.TableRow{Cells: []any{q.Name, age(q.CreationTimestamp, now), strings.Join(requests, ", "), strings.Join(limits, ", ")}}
}
