package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubectl/internal/describe"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

func newDescribe(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "describe (TYPE NAME | TYPE/NAME)",
		Short: "Show details of a specific resource",
		RunE: func(cmd *cobra.Command, args []string) error {
			targets, err := o.parseTargets(cmd.Context(), args)
			if err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			first := true
			for _, t := range targets {
				ns := o.requestNS(t.res, false)
				dyn := client.Dynamic(cl, t.res)
				names := t.names
				if len(names) == 0 {
					l, err := dyn.List(ctx, ns, metav1.ListOptions{})
					if err != nil {
						return err
					}
					for _, it := range l.Items {
						names = append(names, it.GetName())
					}
				}
				for _, name := range names {
					obj, err := dyn.Get(ctx, ns, name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					events, err := client.For[*corev1.Event, *corev1.EventList](cl, eventsResource()).List(ctx, obj.GetNamespace(), metav1.ListOptions{
						FieldSelector: fmt.Sprintf("involvedObject.name=%s,involvedObject.namespace=%s,involvedObject.kind=%s", obj.GetName(), obj.GetNamespace(), obj.GetKind()),
					})
					if err != nil {
						return err
					}
					if !first {
						fmt.Fprintln(o.Out)
					}
					first = false
					if err := describe.Object(o.Out, obj, events.Items); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
}

func eventsResource() *scheme.Resource {
	r, _ := scheme.Lookup("events")
	return r
}
