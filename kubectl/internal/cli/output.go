package cli

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/kubectl/internal/printer"
)

// validateObjectOutput checks the -o of a command that prints one object it made or got.
func validateObjectOutput(format string) error {
	switch format {
	case "", "json", "yaml", "name":
		return nil
	}
	return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: json,name,yaml", format)
}

// printObject prints obj for -o: json and yaml print the object, name its kind/name, and no
// format the kind/name followed by what was done ("created (dry run)").
func (o *options) printObject(format string, obj runtime.Object, done string) error {
	name := "<unknown>"
	if m, err := meta.Accessor(obj); err == nil && m.GetName() != "" {
		name = m.GetName()
	}
	ref := printer.KindName(obj.GetObjectKind().GroupVersionKind()) + "/" + name
	switch format {
	case "":
		_, err := fmt.Fprintf(o.Out, "%s %s\n", ref, done)
		return err
	case "name":
		_, err := fmt.Fprintln(o.Out, ref)
		return err
	}
	return printer.Typed(o.Out, format, obj)
}
