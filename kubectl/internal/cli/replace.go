package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"minik8s.io/kubectl/internal/printer"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

func newReplace(o *options) *cobra.Command {
	ff := fileFlags{packSource: true}
	var dry string
	cmd := &cobra.Command{
		Use:   "replace -f FILENAME",
		Short: "Replace a resource by file name or stdin",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(ff.files) == 0 {
				return errors.New("must specify --filename to replace")
			}
			d := dryRun(dry)
			if err := d.validate(); err != nil {
				return err
			}
			return o.forEachManifest(cmd.Context(), ff, func(ctx context.Context, cl *client.Client, res *scheme.Resource, obj *unstructured.Unstructured) error {
				return o.replaceOne(ctx, cl, res, obj, d)
			})
		},
	}
	ff.add(cmd, "replace")
	cmd.Flags().StringVar(&dry, "dry-run", "none", `Must be "none", "server", or "client".`)
	return cmd
}

// replaceOne writes obj over the live object. Like kubectl it overwrites: a manifest without a
// resourceVersion replaces whatever version is live, so the live one is read for it.
func (o *options) replaceOne(ctx context.Context, cl *client.Client, res *scheme.Resource, obj *unstructured.Unstructured, d dryRun) error {
	dyn := client.Dynamic(cl, res)
	if obj.GetResourceVersion() == "" || d == "client" {
		live, err := dyn.Get(ctx, obj.GetNamespace(), obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if obj.GetResourceVersion() == "" {
			obj.SetResourceVersion(live.GetResourceVersion())
		}
	}
	if d != "client" {
		if _, err := dyn.Update(ctx, obj, metav1.UpdateOptions{DryRun: d.server(), FieldValidation: metav1.FieldValidationStrict}); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "%s/%s replaced%s\n", printer.KindName(res.GVK), obj.GetName(), d.suffix())
	return nil
}
