package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"minik8s.io/kubectl/internal/printer"
	"minik8s.io/shared/client"
)

// labelChange is what one `kubectl label` asks: labels to set and keys to remove.
type labelChange struct {
	set    map[string]string
	remove []string
}

// isLabelArg tells a label change (KEY=VALUE sets, KEY- removes) from a resource argument.
func isLabelArg(a string) bool { return strings.Contains(a, "=") || strings.HasSuffix(a, "-") }

// splitLabelArgs splits kubectl label's arguments as kubectl does: resources first, then
// the label changes.
func splitLabelArgs(args []string) (resources, changes []string, err error) {
	i := slices.IndexFunc(args, isLabelArg)
	if i < 0 {
		return args, nil, nil
	}
	if j := slices.IndexFunc(args[i:], func(a string) bool { return !isLabelArg(a) }); j >= 0 {
		return nil, nil, errors.New("all resources must be specified before label changes: " + args[i+j])
	}
	return args[:i], args[i:], nil
}

// parseLabelChanges checks KEY=VALUE and KEY- arguments and collects them.
func parseLabelChanges(changes []string) (labelChange, error) {
	ch := labelChange{set: map[string]string{}}
	var errs []error
	for _, a := range changes {
		k, v, set := strings.Cut(a, "=")
		if !set {
			k = strings.TrimSuffix(a, "-")
		}
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("invalid label spec: %s: key: %s", a, msg))
		}
		if !set {
			ch.remove = append(ch.remove, k)
			continue
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("invalid label spec: %s: value: %s", a, msg))
		}
		ch.set[k] = v
	}
	for _, k := range ch.remove {
		if _, ok := ch.set[k]; ok {
			errs = append(errs, fmt.Errorf("can not both modify and remove the label %q in the same command", k))
		}
	}
	if len(errs) > 0 {
		return labelChange{}, errors.Join(errs...)
	}
	if len(ch.set) == 0 && len(ch.remove) == 0 {
		return labelChange{}, errors.New("at least one label update is required")
	}
	return ch, nil
}

// apply works out the labels after the change and the merge patch that makes it; it refuses
// to change a label's value without overwrite, as kubectl does.
func (ch labelChange) apply(labels map[string]string, overwrite bool) (after map[string]string, patch []byte, err error) {
	after = maps.Clone(labels)
	if after == nil {
		after = map[string]string{}
	}
	diff := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(ch.set)) {
		v := ch.set[k]
		old, ok := labels[k]
		if ok && old == v {
			continue
		}
		if ok && !overwrite {
			return nil, nil, fmt.Errorf("'%s' already has a value (%s), and --overwrite is false", k, old)
		}
		after[k], diff[k] = v, v
	}
	for _, k := range ch.remove {
		if _, ok := labels[k]; ok {
			delete(after, k)
			diff[k] = nil // a merge patch's null removes the key
		}
	}
	if len(diff) == 0 {
		return after, nil, nil
	}
	patch, err = json.Marshal(map[string]any{"metadata": map[string]any{"labels": diff}})
	return after, patch, err
}

func newLabel(o *options) *cobra.Command {
	var overwrite, list bool
	cmd := &cobra.Command{
		Use:   "label [--overwrite] (TYPE NAME | TYPE/NAME) KEY_1=VAL_1 ... KEY_N=VAL_N",
		Short: "Update the labels on a resource",
		Long: "Update the labels on a resource. A label key and value must begin with a letter or number, and may contain " +
			"letters, numbers, hyphens, dots, and underscores, up to 63 characters each; a key may have a DNS subdomain prefix. " +
			"KEY- removes a label. Changing an existing label's value needs --overwrite.",
		RunE: func(cmd *cobra.Command, args []string) error {
			resArgs, changes, err := splitLabelArgs(args)
			if err != nil {
				return err
			}
			var ch labelChange
			if !list { // --list reads labels; changes named with it are ignored, as kubectl does
				if ch, err = parseLabelChanges(changes); err != nil {
					return err
				}
			}
			if len(resArgs) == 0 {
				return errors.New("one or more resources must be specified as <resource> <name> or <resource>/<name>")
			}
			targets, err := o.parseTargets(cmd.Context(), resArgs)
			if err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			for _, t := range targets {
				if len(t.names) == 0 {
					return fmt.Errorf("resource(s) were provided, but no name was specified for %s", t.res.Plural)
				}
				dyn := client.Dynamic(cl, t.res)
				ns := o.requestNS(t.res, false)
				kindName := printer.KindName(t.res.GVK)
				for _, name := range t.names {
					obj, err := dyn.Get(cmd.Context(), ns, name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					labels := obj.GetLabels()
					if list {
						fmt.Fprintf(o.Out, "Listing labels for %s/%s:\n", kindName, name)
						for _, k := range slices.Sorted(maps.Keys(labels)) {
							fmt.Fprintf(o.Out, " %s=%s\n", k, labels[k])
						}
						continue
					}
					for _, k := range ch.remove {
						if _, ok := labels[k]; !ok {
							fmt.Fprintf(o.ErrOut, "label %q not found.\n", k)
						}
					}
					after, patch, err := ch.apply(labels, overwrite)
					if err != nil {
						return err
					}
					msg := "not labeled"
					if patch != nil {
						if _, err := dyn.Patch(cmd.Context(), ns, name, types.MergePatchType, patch, ""); err != nil {
							return err
						}
						// As kubectl words it: a change that shortens the labels "unlabeled".
						msg = "labeled"
						if !overwrite && jsonLen(after) < jsonLen(labels) {
							msg = "unlabeled"
						}
					}
					fmt.Fprintf(o.Out, "%s/%s %s\n", kindName, name, msg)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "If true, allow labels to be overwritten, otherwise reject label updates that overwrite existing labels.")
	cmd.Flags().BoolVar(&list, "list", false, "If true, display the labels for a given resource.")
	return cmd
}

func jsonLen(labels map[string]string) int {
	b, _ := json.Marshal(labels)
	return len(b)
}
