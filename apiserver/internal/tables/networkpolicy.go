package tables

import (
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NetworkPolicy is how kubectl get shows NetworkPolicies.
var NetworkPolicy = NewPrinter(networkPolicyColumns, networkPolicyRow)

var networkPolicyColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Pod-Selector", Type: "string", Description: networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]},
	ageColumn,
}

func networkPolicyRow(np *networkingv1.NetworkPolicy, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), age(np.CreationTimestamp, now)}}
}
