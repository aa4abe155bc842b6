package crdschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/jsonpath"
)

var metadataDescriptions = metav1.ObjectMeta{}.SwaggerDoc()

// buildColumns mirrors upstream's table convertor: a Name column, then the
// version's additionalPrinterColumns or, when it has none, Age. A column
// whose JSONPath does not parse ends the list, as upstream serves the columns
// built before the bad one (CRD validation rejects such paths anyway).
func (v *Version) buildColumns(cols []apiextensionsv1.CustomResourceColumnDefinition) {
	if len(cols) == 0 {
		cols = []apiextensionsv1.CustomResourceColumnDefinition{{
			Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
			Description: metadataDescriptions["creationTimestamp"],
		}}
	}
	v.columns = []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: metadataDescriptions["name"]}}
	for _, col := range cols {
		p := jsonpath.New(col.Name)
		if err := p.Parse(fmt.Sprintf("{%s}", col.JSONPath)); err != nil {
			return
		}
		p.AllowMissingKeys(true)
		desc := col.Description
		if desc == "" {
			desc = "Custom resource definition column (in JSONPath format): " + col.JSONPath
		}
		v.cellPaths = append(v.cellPaths, p)
		v.columns = append(v.columns, metav1.TableColumnDefinition{
			Name: col.Name, Type: col.Type, Format: col.Format, Description: desc, Priority: col.Priority,
		})
	}
}

// Columns returns the Table column definitions of the version.
func (v *Version) Columns() []metav1.TableColumnDefinition {
	return append([]metav1.TableColumnDefinition(nil), v.columns...)
}

// Cells returns the Table cells of obj, one per column: the name, then each
// column's value typed after the column (nil when missing or of another
// type). Dates are ages such as "5m", as kube-apiserver sends them.
func (v *Version) Cells(obj *unstructured.Unstructured) ([]any, error) {
	return v.CellsAt(obj, time.Now())
}

// CellsAt is Cells with ages measured at now, so that every row of a table
// shares one clock.
func (v *Version) CellsAt(obj *unstructured.Unstructured, now time.Time) ([]any, error) {
	if obj == nil {
		return nil, fmt.Errorf("no object")
	}
	cells := make([]any, 1, len(v.columns))
	cells[0] = obj.GetName()
	var buf bytes.Buffer
	for i, p := range v.cellPaths {
		typ := v.columns[i+1].Type
		results, err := p.FindResults(obj.Object)
		if err != nil || len(results) == 0 || len(results[0]) == 0 {
			cells = append(cells, nil)
			continue
		}
		// Columns are simple paths, so the first result is the only one.
		value := results[0][0].Interface()
		if typ == "string" {
			if err := p.PrintResults(&buf, []reflect.Value{reflect.ValueOf(value)}); err != nil {
				cells = append(cells, nil)
				continue
			}
			cells = append(cells, buf.String())
			buf.Reset()
			continue
		}
		cells = append(cells, cell(typ, value, now))
	}
	return cells, nil
}

func cell(typ string, value any, now time.Time) any {
	switch typ {
	case "integer":
		switch n := value.(type) {
		case int64:
			return n
		case float64:
			return int64(n)
		case json.Number:
			if i, err := n.Int64(); err == nil {
				return i
			}
		}
	case "number":
		switch n := value.(type) {
		case int64:
			return float64(n)
		case float64:
			return n
		case json.Number:
			if f, err := n.Float64(); err == nil {
				return f
			}
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "date":
		if s, ok := value.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			if t.IsZero() {
				return "<unknown>"
			}
			return duration.HumanDuration(now.Sub(t.Time))
		}
	}
	return nil
}
