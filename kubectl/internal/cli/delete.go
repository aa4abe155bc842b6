package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/kubectl/internal/printer"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

type deleteFlags struct {
	ff           fileFlags
	selector     string
	all          bool
	gracePeriod  int
	wait         bool
	timeout      time.Duration
	ignoreAbsent bool
	cascade      string
}

// propagation reads --cascade as kubectl does: background (the default, also "true"),
// foreground, or orphan ("false").
func propagation(cascade string) (metav1.DeletionPropagation, error) {
	switch cascade {
	case "background", "true":
		return metav1.DeletePropagationBackground, nil
	case "foreground":
		return metav1.DeletePropagationForeground, nil
	case "orphan", "false":
		return metav1.DeletePropagationOrphan, nil
	}
	return "", fmt.Errorf(`invalid cascade value (%s). Must be "background", "foreground", or "orphan"`, cascade)
}

func newDelete(o *options) *cobra.Command {
	var d deleteFlags
	cmd := &cobra.Command{
		Use:   "delete ([-f FILENAME] | TYPE [(NAME | -l label | --all)])",
		Short: "Delete resources by file names, stdin, resources and names, or by resources and label selector",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if _, err := propagation(d.cascade); err != nil {
				return err
			}
			if d.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, d.timeout)
				defer cancel()
			}
			if len(d.ff.files) > 0 {
				if len(args) > 0 {
					return errors.New("cannot specify both resource arguments and -f")
				}
				return o.forEachManifest(ctx, d.ff, func(ctx context.Context, cl *client.Client, res *scheme.Resource, obj *unstructured.Unstructured) error {
					return o.deleteOne(ctx, cl, res, obj.GetNamespace(), obj.GetName(), d)
				})
			}
			targets, err := o.parseTargets(cmd.Context(), args)
			if err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			failed := false
			for _, t := range targets {
				ns := o.requestNS(t.res, false)
				names := t.names
				if len(names) == 0 {
					if d.selector == "" && !d.all {
						return errors.New("resource(s) were provided, but no name was specified")
					}
					l, err := client.Dynamic(cl, t.res).List(ctx, ns, metav1.ListOptions{LabelSelector: d.selector})
					if err != nil {
						return err
					}
					for _, it := range l.Items {
						names = append(names, it.GetName())
					}
					if len(names) == 0 {
						o.noResources([]target{t}, false)
					}
				}
				for _, name := range names {
					if err := o.deleteOne(ctx, cl, t.res, ns, name, d); err != nil {
						fmt.Fprintln(o.ErrOut, FormatError(err))
						failed = true
					}
				}
			}
			if failed {
				return errReported
			}
			return nil
		},
	}
	d.ff.add(cmd, "delete")
	f := cmd.Flags()
	f.StringVarP(&d.selector, "selector", "l", "", "Selector (label query) to filter on.")
	f.BoolVar(&d.all, "all", false, "Delete all resources, in the namespace of the specified resource types.")
	f.IntVar(&d.gracePeriod, "grace-period", -1, "Period of time in seconds given to the resource to terminate gracefully. Ignored if negative.")
	f.BoolVar(&d.wait, "wait", true, "If true, wait for resources to be gone before returning.")
	f.DurationVar(&d.timeout, "timeout", 0, "The length of time to wait before giving up on a delete, zero means no limit.")
	f.BoolVar(&d.ignoreAbsent, "ignore-not-found", false, "Treat \"resource not found\" as a successful delete.")
	f.StringVar(&d.cascade, "cascade", "background", `Must be "background", "orphan", or "foreground". Selects the deletion cascading strategy for the dependents (e.g. Pods created by a ReplicationController). Defaults to background.`)
	f.Lookup("cascade").NoOptDefVal = "background"
	return cmd
}

func (o *options) deleteOne(ctx context.Context, cl *client.Client, res *scheme.Resource, ns, name string, d deleteFlags) error {
	dyn := client.Dynamic(cl, res)
	policy, err := propagation(d.cascade)
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{PropagationPolicy: &policy}
	if d.gracePeriod >= 0 {
		gp := int64(d.gracePeriod)
		opts.GracePeriodSeconds = &gp
	}
	// Read first: the watch that waits for the object to go starts from this version, so
	// its deletion cannot slip between the delete and the watch.
	var rv string
	if d.wait {
		obj, err := dyn.Get(ctx, ns, name, metav1.GetOptions{})
		if err != nil {
			if d.ignoreAbsent && errors.Is(err, apierror.ErrNotFound) {
				return nil
			}
			return err
		}
		rv = obj.GetResourceVersion()
	}
	if err := dyn.Delete(ctx, ns, name, opts); err != nil {
		if d.ignoreAbsent && errors.Is(err, apierror.ErrNotFound) {
			return nil
		}
		return err
	}
	fmt.Fprintf(o.Out, "%s %q deleted\n", printer.KindName(res.GVK), name)
	if !d.wait {
		return nil
	}
	return waitGone(ctx, dyn, ns, name, rv)
}

// waitGone returns when the object is deleted (graceful deletion and finalizers may keep it
// for a while after the DELETE call).
func waitGone(ctx context.Context, dyn *client.Unstructured, ns, name, rv string) error {
	for {
		_, err := dyn.Get(ctx, ns, name, metav1.GetOptions{})
		if errors.Is(err, apierror.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		w, err := dyn.Watch(ctx, ns, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: rv})
		if err != nil {
			return err
		}
		gone, err := untilDeleted(ctx, w)
		w.Stop()
		if gone || err != nil {
			return err
		}
		// The watch ended without a deletion (server timeout, expired version): look again
		// and watch from now.
		rv = ""
	}
}

func untilDeleted(ctx context.Context, w watch.Interface) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("timed out waiting for the deletion: %w", ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return true, nil
			case watch.Error:
				return false, nil
			}
		}
	}
}
