package tables

import (
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PriorityClass is how kubectl get shows PriorityClasses, as upstream.
var PriorityClass = NewPrinter(priorityClassColumns, priorityClassRow)

var priorityClassColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Value", Type: "integer", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["value"]},
	{Name: "Global-Default", Type: "boolean", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]},
	ageColumn,
	{Name: "PreemptionPolicy", Type: "string", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]},
}

func priorityClassRow(pc *schedulingv1.PriorityClass, now time.Time) metav1.TableRow {
	policy := "<none>"
	if pc.PreemptionPolicy != nil {
		policy = string(*pc.PreemptionPolicy)
	}
	return metav1.TableRow{Cells: []any{pc.Name, int64(pc.Value), pc.GlobalDefault, age(pc.CreationTimestamp, now), policy}}
}
