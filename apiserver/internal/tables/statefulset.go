package tables

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StatefulSet is how kubectl get shows StatefulSets.
var StatefulSet = NewPrinter(statefulSetColumns, statefulSetRow)

var statefulSetColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
	ageColumn,
	containersColumn,
	imagesColumn,
}

func statefulSetRow(s *appsv1.StatefulSet, now time.Time) metav1.TableRow {
	names, images := containerCells(s.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, replicas(s.Spec.Replicas)),
		age(s.CreationTimestamp, now), names, images,
	}}
}
