package tables

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CustomResourceDefinition is how kubectl get shows CRDs, as upstream: the name and when it
// was created, as a timestamp rather than an age.
var CustomResourceDefinition = NewPrinter(crdColumns, crdRow)

var crdColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

func crdRow(crd *apiextensionsv1.CustomResourceDefinition, _ time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{crd.Name, crd.CreationTimestamp.UTC().Format(time.RFC3339)}}
}
