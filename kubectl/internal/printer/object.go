package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"
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
	v := printable(objs, single)
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

// printable is one object as itself, or several as a v1 List.
func printable(objs []*unstructured.Unstructured, single bool) any {
	if single && len(objs) == 1 {
		return objs[0].Object
	}
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o.Object
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}}
}

// ParseJSONPath parses a kubectl JSONPath template (`{.metadata.name}`, `{range .items[*]}...{end}`),
// with kubectl's error wording. Missing keys print nothing, as with kubectl's default
// --allow-missing-template-keys.
func ParseJSONPath(tmpl string) (*jsonpath.JSONPath, error) {
	jp := jsonpath.New("out").AllowMissingKeys(true)
	if err := jp.Parse(tmpl); err != nil {
		return nil, fmt.Errorf("error parsing jsonpath %s, %w", tmpl, err)
	}
	return jp, nil
}

// JSONPath prints objects through a parsed template: one object as itself, several as a v1
// List, as kubectl does; nothing is added after the template's own text.
func JSONPath(w io.Writer, jp *jsonpath.JSONPath, tmpl string, objs []*unstructured.Unstructured, single bool) error {
	if err := jp.Execute(w, printable(objs, single)); err != nil {
		return fmt.Errorf("error executing jsonpath %q: %w", tmpl, err)
	}
	return nil
}
