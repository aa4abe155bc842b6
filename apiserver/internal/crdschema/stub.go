// Package crdschema: temporary stand-in until the real package lands (not committed).
package crdschema

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func DefaultDefinition(crd *apiextensionsv1.CustomResourceDefinition) {}
func ValidateDefinition(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	return nil
}

type Version struct{}

func NewVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Version, error) {
	return &Version{}, nil
}
func (v *Version) Default(obj map[string]any)                                         {}
func (v *Version) Prune(obj map[string]any)                                           {}
func (v *Version) Validate(obj, old *unstructured.Unstructured) field.ErrorList       { return nil }
func (v *Version) ValidateStatus(obj, old *unstructured.Unstructured) field.ErrorList { return nil }
func (v *Version) Scale(obj *unstructured.Unstructured) (spec, status int32, selector string, ok bool, err error) {
	return 0, 0, "", false, nil
}
func (v *Version) SetScale(obj *unstructured.Unstructured, replicas int32) error { return nil }
func (v *Version) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name"}, {Name: "Age", Type: "date"}}
}
func (v *Version) Cells(obj *unstructured.Unstructured) ([]any, error) {
	return []any{obj.GetName(), obj.GetCreationTimestamp().UTC().Format("2006-01-02T15:04:05Z")}, nil
}
func (v *Version) Fields(obj *unstructured.Unstructured) fields.Set {
	return fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()}
}
