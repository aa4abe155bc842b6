package tables

import (
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IngressClass is how kubectl get shows IngressClasses.
var IngressClass = NewPrinter(ingressClassColumns, ingressClassRow)

var ingressClassColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Controller", Type: "string", Description: "Controller that is responsible for handling this class"},
	{Name: "Parameters", Type: "string", Description: "A reference to a resource with additional parameters"},
	ageColumn,
}

func ingressClassRow(ic *networkingv1.IngressClass, now time.Time) metav1.TableRow {
	params := "<none>"
	if p := ic.Spec.Parameters; p != nil {
		params = p.Kind
		if p.APIGroup != nil {
			params += "." + *p.APIGroup
		}
		params += "/" + p.Name
	}
	return metav1.TableRow{Cells: []any{ic.Name, ic.Spec.Controller, params, age(ic.CreationTimestamp, now)}}
}
