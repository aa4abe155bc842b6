package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"minik8s.io/shared/client"
)

type autoscaleFlags struct {
	min, max, cpuPercent int32
	name                 string
	dryRun               string
}

func newAutoscale(o *options) *cobra.Command {
	var f autoscaleFlags
	cmd := &cobra.Command{
		Use:   "autoscale (TYPE NAME | TYPE/NAME) [--min=MINPODS] --max=MAXPODS [--cpu-percent=CPU]",
		Short: "Auto-scale a deployment, replica set or other object with a scale subresource",
		Long: "Creates an autoscaler (autoscaling/v2 HorizontalPodAutoscaler) that keeps the number of pods of the object " +
			"between --min and --max, aiming at --cpu-percent of the pods' CPU requests (the server's 80% when not given).",
		Example: "  kubectl autoscale deployment/web --min=1 --max=5 --cpu-percent=50",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.max < 1 {
				return usageError(cmd, "--max=MAXPODS is required and must be at least 1")
			}
			if f.min > f.max {
				return usageError(cmd, "--max=MAXPODS must be larger or equal to --min=MINPODS")
			}
			ref := args[0]
			if len(args) == 2 {
				ref = args[0] + "/" + args[1]
			}
			return o.autoscale(cmd.Context(), ref, f)
		},
	}
	cmd.Flags().Int32Var(&f.min, "min", -1, "The lower limit for the number of pods; the server's default (1) when not given")
	cmd.Flags().Int32Var(&f.max, "max", -1, "The upper limit for the number of pods. Required.")
	cmd.Flags().Int32Var(&f.cpuPercent, "cpu-percent", -1, "The target average CPU utilization (a percentage of requested CPU) over all the pods")
	cmd.Flags().StringVar(&f.name, "name", "", "The name of the autoscaler; the object's name when not given")
	cmd.Flags().StringVar(&f.dryRun, "dry-run", "none", `Must be "none" or "server"`)
	return cmd
}

func (o *options) autoscale(ctx context.Context, arg string, f autoscaleFlags) error {
	ref, err := parsePodRef(arg)
	if err != nil {
		return err
	}
	if !ref.res.HasSubresource("scale") {
		return fmt.Errorf("cannot autoscale a %s: it has no scale subresource", ref.res.GVK.Kind)
	}
	cl, err := o.client()
	if err != nil {
		return err
	}
	ns := o.ns()
	var obj unstructured.Unstructured
	if err := cl.Get().Resource(ref.res, ns, ref.name).Into(ctx, &obj); err != nil {
		return err
	}
	name := f.name
	if name == "" {
		name = ref.name
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: autoscalingv2.SchemeGroupVersion.String(), Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: ref.res.GVK.GroupVersion().String(), Kind: ref.res.GVK.Kind, Name: ref.name},
			MaxReplicas:    f.max,
		},
	}
	if f.min >= 0 {
		hpa.Spec.MinReplicas = &f.min
	}
	if f.cpuPercent >= 0 {
		hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &f.cpuPercent}}}}
	}
	opts := metav1.CreateOptions{}
	suffix := ""
	switch f.dryRun {
	case "none", "":
	case "server":
		opts.DryRun, suffix = []string{metav1.DryRunAll}, " (server dry run)"
	default:
		return fmt.Errorf(`invalid --dry-run %q: must be "none" or "server"`, f.dryRun)
	}
	if _, err := client.MustFor[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList](cl).Create(ctx, hpa, opts); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "horizontalpodautoscaler.autoscaling/%s autoscaled%s\n", name, suffix)
	return nil
}
