package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"minik8s.io/kubectl/internal/apply"
	"minik8s.io/kubectl/internal/fnsource"
	"minik8s.io/kubectl/internal/manifest"
	"minik8s.io/kubectl/internal/printer"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// fileFlags are -f and -R, shared by apply, create and delete.
type fileFlags struct {
	files     []string
	recursive bool
	// packSource packs the local files of Functions' spec.sourcePath into spec.source (apply
	// and create send them; delete needs only names).
	packSource bool
}

func (f *fileFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().StringSliceVarP(&f.files, "filename", "f", nil, "Filename, directory, or URL to files that contains the configuration to "+what)
	cmd.Flags().BoolVarP(&f.recursive, "recursive", "R", false, "Process the directory used in -f, --filename recursively.")
}

// dryRun is the --dry-run flag: none, client or server.
type dryRun string

func (d dryRun) suffix() string {
	switch d {
	case "client":
		return " (dry run)"
	case "server":
		return " (server dry run)"
	}
	return ""
}

func (d dryRun) server() []string {
	if d == "server" {
		return []string{metav1.DryRunAll}
	}
	return nil
}

func (d dryRun) validate() error {
	switch d {
	case "", "none", "client", "server":
		return nil
	}
	return fmt.Errorf(`Invalid dry-run value (%s). Must be "none", "server", or "client".`, d) //nolint:staticcheck // kubectl's wording
}

func newApply(o *options) *cobra.Command {
	ff := fileFlags{packSource: true}
	var dry string
	cmd := &cobra.Command{
		Use:   "apply -f FILENAME",
		Short: "Apply a configuration to a resource by file name or stdin",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(ff.files) == 0 {
				return errors.New("must specify one of -f and -k")
			}
			if err := dryRun(dry).validate(); err != nil {
				return err
			}
			return o.forEachManifest(cmd.Context(), ff, func(ctx context.Context, cl *client.Client, res *scheme.Resource, obj *unstructured.Unstructured) error {
				return o.applyOne(ctx, cl, res, obj, dryRun(dry))
			})
		},
	}
	ff.add(cmd, "apply")
	cmd.Flags().StringVar(&dry, "dry-run", "none", `Must be "none", "server", or "client".`)
	return cmd
}

// forEachManifest reads the -f objects and runs fn on each with its resource and namespace
// settled. Like kubectl it goes on after a failed object and reports failure at the end.
func (o *options) forEachManifest(ctx context.Context, ff fileFlags, fn func(context.Context, *client.Client, *scheme.Resource, *unstructured.Unstructured) error) error {
	objs, err := manifest.Read(ff.files, ff.recursive, o.In)
	if err != nil {
		return err
	}
	cl, err := o.client()
	if err != nil {
		return err
	}
	failed := false
	for _, m := range objs {
		res, err := o.settle(ctx, m)
		if err == nil && ff.packSource {
			err = fnsource.Pack(m.Unstructured, m.Source)
		}
		if err == nil {
			err = fn(ctx, cl, res, m.Unstructured)
		}
		if err != nil {
			fmt.Fprintln(o.ErrOut, FormatError(err))
			failed = true
		}
	}
	if failed {
		return errReported
	}
	return nil
}

// settle finds the resource serving the object's kind, built-in or custom, and fills the
// object's namespace from -n or the context.
func (o *options) settle(ctx context.Context, m manifest.Object) (*scheme.Resource, error) {
	gvk := m.GroupVersionKind()
	res, ok, err := o.resolver().kind(ctx, gvk)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("resource mapping not found for name: %q namespace: %q from %q: no matches for kind %q in version %q\nensure CRDs are installed first",
			m.GetName(), m.GetNamespace(), m.Source, gvk.Kind, gvk.GroupVersion().String())
	}
	if !res.Namespaced {
		return res, nil
	}
	if ns := m.GetNamespace(); ns != "" {
		if o.namespace != "" && o.namespace != ns {
			return nil, fmt.Errorf("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.", ns, o.namespace, ns)
		}
		return res, nil
	}
	m.SetNamespace(o.ns())
	return res, nil
}

func (o *options) applyOne(ctx context.Context, cl *client.Client, res *scheme.Resource, obj *unstructured.Unstructured, dry dryRun) error {
	dyn := client.Dynamic(cl, res)
	name := printer.KindName(res.GVK) + "/" + obj.GetName()
	live, err := dyn.Get(ctx, obj.GetNamespace(), obj.GetName(), metav1.GetOptions{})
	switch {
	case errors.Is(err, apierror.ErrNotFound):
		live = nil
	case err != nil:
		return err
	}
	d, err := apply.Decide(obj, live)
	if err != nil {
		return err
	}
	if dry != "client" {
		switch d.Action {
		case apply.Create:
			_, err = dyn.Create(ctx, d.Object, metav1.CreateOptions{DryRun: dry.server(), FieldValidation: metav1.FieldValidationStrict})
		case apply.Configure:
			_, err = dyn.PatchWithOptions(ctx, obj.GetNamespace(), obj.GetName(), d.PatchType, d.Patch, metav1.PatchOptions{DryRun: dry.server(), FieldValidation: metav1.FieldValidationStrict})
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "%s %s%s\n", name, d.Action, dry.suffix())
	return nil
}

func newCreate(o *options) *cobra.Command {
	ff := fileFlags{packSource: true}
	var dry string
	cmd := &cobra.Command{
		Use:   "create -f FILENAME",
		Short: "Create a resource from a file or from stdin",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(ff.files) == 0 {
				return errors.New("must specify one of -f and -k")
			}
			if err := dryRun(dry).validate(); err != nil {
				return err
			}
			d := dryRun(dry)
			return o.forEachManifest(cmd.Context(), ff, func(ctx context.Context, cl *client.Client, res *scheme.Resource, obj *unstructured.Unstructured) error {
				name := obj.GetName()
				if d != "client" {
					created, err := client.Dynamic(cl, res).Create(ctx, obj, metav1.CreateOptions{DryRun: d.server(), FieldValidation: metav1.FieldValidationStrict})
					if err != nil {
						return err
					}
					name = created.GetName() // generateName: the name the apiserver chose
				}
				fmt.Fprintf(o.Out, "%s/%s created%s\n", printer.KindName(res.GVK), name, d.suffix())
				return nil
			})
		},
	}
	ff.add(cmd, "create")
	cmd.Flags().StringVar(&dry, "dry-run", "none", `Must be "none", "server", or "client".`)
	cmd.AddCommand(newCreateRole(o), newCreateClusterRole(o), newCreateRoleBinding(o), newCreateClusterRoleBinding(o), newCreateToken(o), newCreateJob(o), newCreateCronJob(o), newCreatePDB(o), newCreatePriorityClass(o))
	return cmd
}
