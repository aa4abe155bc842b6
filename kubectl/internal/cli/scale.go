package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/kubectl/internal/printer"
	"minik8s.io/shared/client"
)

func newScale(o *options) *cobra.Command {
	var replicas, current int
	cmd := &cobra.Command{
		Use:   "scale [--current-replicas=count] --replicas=COUNT (TYPE NAME | TYPE/NAME)",
		Short: "Set a new size for a deployment or replica set",
		RunE: func(cmd *cobra.Command, args []string) error {
			if replicas < 0 {
				return errors.New("the --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0")
			}
			targets, err := o.parseTargets(cmd.Context(), args)
			if err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			for _, t := range targets {
				if !hasScale(t.res.Subresources) {
					return fmt.Errorf("cannot scale %s: it has no scale subresource", printer.KindName(t.res.GVK))
				}
				ns := o.requestNS(t.res, false)
				for _, name := range t.names {
					if err := scaleOne(cmd, cl, t, ns, name, int32(replicas), current); err != nil {
						return err
					}
					fmt.Fprintf(o.Out, "%s/%s scaled\n", printer.KindName(t.res.GVK), name)
				}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&replicas, "replicas", -1, "The new desired number of replicas. Required.")
	cmd.Flags().IntVar(&current, "current-replicas", -1, "Precondition for current size. Requires that the current size of the resource match this value in order to scale.")
	return cmd
}

func hasScale(subs []string) bool {
	for _, s := range subs {
		if s == "scale" {
			return true
		}
	}
	return false
}

// scaleOne writes the scale subresource as kubectl does: a merge patch, or with
// --current-replicas a read, the check, and an update guarded by the resourceVersion read.
func scaleOne(cmd *cobra.Command, cl *client.Client, t target, ns, name string, replicas int32, current int) error {
	ctx := cmd.Context()
	if current < 0 {
		body, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas}})
		_, err := cl.Patch(string(types.MergePatchType)).Resource(t.res, ns, name, "scale").Body(body).Do(ctx)
		return err
	}
	var sc autoscalingv1.Scale
	if err := cl.Get().Resource(t.res, ns, name, "scale").Into(ctx, &sc); err != nil {
		return err
	}
	if int(sc.Spec.Replicas) != current {
		return fmt.Errorf("Expected replicas to be %d, was %d", current, sc.Spec.Replicas) //nolint:staticcheck // kubectl's words
	}
	sc.Spec.Replicas = replicas
	_, err := cl.Put().Resource(t.res, ns, name, "scale").Body(&sc).Do(ctx)
	return err
}

func newSet(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set SUBCOMMAND",
		Short: "Set specific features on objects",
	}
	cmd.AddCommand(newSetImage(o))
	return cmd
}

func newSetImage(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "image (TYPE NAME | TYPE/NAME) CONTAINER_NAME_1=CONTAINER_IMAGE_1 ... CONTAINER_NAME_N=CONTAINER_IMAGE_N",
		Short: "Update the image of a pod template",
		RunE: func(cmd *cobra.Command, args []string) error {
			var objs, pairs []string
			for _, a := range args {
				if name, img, ok := cutImage(a); ok && name != "" && img != "" {
					pairs = append(pairs, a)
				} else {
					objs = append(objs, a)
				}
			}
			if len(pairs) == 0 {
				return errors.New("at least one image update is required")
			}
			targets, err := o.parseTargets(cmd.Context(), objs)
			if err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			for _, t := range targets {
				ns := o.requestNS(t.res, false)
				dyn := client.Dynamic(cl, t.res)
				for _, name := range t.names {
					obj, err := dyn.Get(cmd.Context(), ns, name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					patch, changed, err := ImagePatch(obj, pairs)
					if err != nil {
						return err
					}
					if !changed {
						continue // as kubectl: nothing to say about an object that would not change
					}
					if _, err := dyn.Patch(cmd.Context(), ns, name, types.StrategicMergePatchType, patch); err != nil {
						return err
					}
					fmt.Fprintf(o.Out, "%s/%s image updated\n", printer.KindName(t.res.GVK), name)
				}
			}
			return nil
		},
	}
}

func cutImage(a string) (string, string, bool) {
	for i := 0; i < len(a); i++ {
		switch a[i] {
		case '/':
			return "", "", false // TYPE/NAME
		case '=':
			return a[:i], a[i+1:], true
		}
	}
	return "", "", false
}

// ImagePatch is the strategic merge patch that sets container images of obj (a pod, or an
// object with a pod template) from NAME=IMAGE pairs ("*" for every container), init
// containers included, and whether any image changes. A name no container has is an error.
func ImagePatch(obj *unstructured.Unstructured, pairs []string) ([]byte, bool, error) {
	path := []string{"spec", "template", "spec"}
	if obj.GetKind() == "Pod" {
		path = []string{"spec"}
	}
	spec, found, err := unstructured.NestedMap(obj.Object, path...)
	if err != nil || !found {
		return nil, false, fmt.Errorf("%s/%s has no pod template", obj.GetKind(), obj.GetName())
	}
	patchSpec := map[string]any{}
	changed := false
	for _, pair := range pairs {
		name, image, _ := cutImage(pair)
		matched := false
		for _, field := range []string{"initContainers", "containers"} {
			list, _ := spec[field].([]any)
			for _, c := range list {
				cm, _ := c.(map[string]any)
				cname, _ := cm["name"].(string)
				if name != "*" && cname != name {
					continue
				}
				matched = true
				if cm["image"] != image {
					changed = true
				}
				entries, _ := patchSpec[field].([]any)
				patchSpec[field] = append(entries, map[string]any{"name": cname, "image": image})
			}
		}
		if !matched {
			return nil, false, fmt.Errorf("unable to find container named %q", name)
		}
	}
	var patch map[string]any = patchSpec
	for i := len(path) - 1; i >= 0; i-- {
		patch = map[string]any{path[i]: patch}
	}
	out, err := json.Marshal(patch)
	return out, changed, err
}
