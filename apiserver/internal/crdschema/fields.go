package crdschema

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/jsonpath"
)

// buildSelectableFields parses the version's selectableFields; CRD
// validation guarantees the paths are simple, so one that does not parse is
// skipped rather than failing every list.
func (v *Version) buildSelectableFields(sfs []apiextensionsv1.SelectableField) {
	for _, sf := range sfs {
		p := jsonpath.New("selectableField")
		p.AllowMissingKeys(true)
		if err := p.Parse("{" + sf.JSONPath + "}"); err != nil {
			continue
		}
		v.selectable = append(v.selectable, selectableField{name: strings.TrimPrefix(sf.JSONPath, "."), path: p})
	}
}

// Fields returns the fields a field selector may name, with obj's values:
// metadata.name, metadata.namespace for namespaced kinds, and each
// selectable field ("" when obj does not set it).
func (v *Version) Fields(obj *unstructured.Unstructured) fields.Set {
	set := fields.Set{"metadata.name": obj.GetName()}
	if v.namespaced {
		set["metadata.namespace"] = obj.GetNamespace()
	}
	for _, sf := range v.selectable {
		set[sf.name] = ""
		results, err := sf.path.FindResults(obj.Object)
		if err != nil || len(results) != 1 || len(results[0]) != 1 {
			continue
		}
		if value := results[0][0].Interface(); value != nil {
			set[sf.name] = fmt.Sprint(value)
		}
	}
	return set
}
