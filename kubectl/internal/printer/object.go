package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// KindName is how kubectl names an object kind in messages: lower-case kind, then ".group"
// for named groups: "pod", "deployment.apps", "function.serverless.minik8s.io".
func KindName(gvk schema.GroupVersionKind) string {
	k := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		k += "." + gvk.Group
	}
	return k
}

// Objects prints objects as yaml or json. One object prints alone; several print as a
// v1 List, as kubectl does.
func Objects(w io.Writer, format string, objs []*unstructured.Unstructured, single bool) error {
	var v any
	if single && len(objs) == 1 {
		v = objs[0].Object
	} else {
		items := make([]any, len(objs))
		for i, o := range objs {
			items[i] = o.Object
		}
		v = map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}}
	}
	switch format {
	case "json":
		data, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
		_, err = w.Write(data)
		return err
	}
	return fmt.Errorf("unable to match a printer suitable for the output format %q", format)
}
