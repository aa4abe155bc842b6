package tables

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PodDisruptionBudget is how kubectl get shows PodDisruptionBudgets.
var PodDisruptionBudget = NewPrinter(pdbColumns, pdbRow)

var pdbColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Min Available", Type: "string", Description: "The minimum number or percentage of available pods this budget requires."},
	{Name: "Max Unavailable", Type: "string", Description: "The maximum number or percentage of unavailable pods this budget requires."},
	{Name: "Allowed Disruptions", Type: "integer", Description: "Calculated number of pods that may be disrupted at this time."},
	ageColumn,
}

func pdbRow(pdb *policyv1.PodDisruptionBudget, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{
		pdb.Name, orNA(pdb.Spec.MinAvailable), orNA(pdb.Spec.MaxUnavailable),
		int64(pdb.Status.DisruptionsAllowed), age(pdb.CreationTimestamp, now),
	}}
}

func orNA(v *intstr.IntOrString) string {
	if v == nil {
		return "N/A"
	}
	return v.String()
}
