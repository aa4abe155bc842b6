package tables

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// DaemonSet is how kubectl get shows DaemonSets.
var DaemonSet = NewPrinter(daemonSetColumns, daemonSetRow)

var daemonSetColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Desired", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]},
	{Name: "Current", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]},
	{Name: "Ready", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]},
	{Name: "Up-to-date", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]},
	{Name: "Available", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]},
	{Name: "Node Selector", Type: "string", Description: corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]},
	ageColumn,
	containersColumn,
	imagesColumn,
	{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]},
}

func daemonSetRow(ds *appsv1.DaemonSet, now time.Time) metav1.TableRow {
	st := ds.Status
	names, images := containerCells(ds.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		ds.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
		int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		age(ds.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(ds.Spec.Selector),
	}}
}
