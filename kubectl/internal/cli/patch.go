package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"minik8s.io/kubectl/internal/printer"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

var patchTypes = map[string]types.PatchType{
	"strategic": types.StrategicMergePatchType,
	"merge":     types.MergePatchType,
	"json":      types.JSONPatchType,
}

func newPatch(o *options) *cobra.Command {
	var data, typ, sub string
	cmd := &cobra.Command{
		Use:   "patch (TYPE NAME | TYPE/NAME) -p PATCH [--type strategic|merge|json]",
		Short: "Update fields of a resource",
		RunE: func(cmd *cobra.Command, args []string) error {
			targets, err := o.parseTargets(cmd.Context(), args)
			if err != nil {
				return err
			}
			if len(targets) != 1 || len(targets[0].names) != 1 {
				return errors.New("patch requires exactly one resource and name")
			}
			pt, ok := patchTypes[typ]
			if !ok {
				return fmt.Errorf("--type must be one of [json merge strategic], not %q", typ)
			}
			if data == "" {
				return errors.New("must specify -p to patch")
			}
			// Patches may be written in YAML, as with kubectl.
			body, err := yaml.YAMLToJSON([]byte(data))
			if err != nil {
				return fmt.Errorf("unable to parse %q: %w", data, err)
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			t := targets[0]
			dyn := client.Dynamic(cl, t.res)
			ns := o.requestNS(t.res, false)
			before, err := dyn.Get(cmd.Context(), ns, t.names[0], metav1.GetOptions{})
			if err != nil {
				return err
			}
			after, err := dyn.Patch(cmd.Context(), ns, t.names[0], pt, body, sub)
			var ae *apierror.Error
			if errors.Is(err, apierror.ErrUnsupportedMediaType) && errors.As(err, &ae) {
				// As kubectl words it: a strategic merge patch of a custom resource, say.
				return fmt.Errorf("%s is not supported by %s: %s", pt, t.res.GVK, ae.Status.Message)
			}
			if err != nil {
				return err
			}
			suffix := "patched"
			if after.GetResourceVersion() == before.GetResourceVersion() {
				suffix = "patched (no change)"
			}
			fmt.Fprintf(o.Out, "%s/%s %s\n", printer.KindName(t.res.GVK), t.names[0], suffix)
			return nil
		},
	}
	cmd.Flags().StringVarP(&data, "patch", "p", "", "The patch to be applied to the resource JSON file.")
	cmd.Flags().StringVar(&typ, "type", "strategic", "The type of patch being provided; one of [json merge strategic]")
	cmd.Flags().StringVar(&sub, "subresource", "", "If specified, patch will operate on the subresource of the requested object.")
	return cmd
}
