package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"minik8s.io/kubectl/internal/printer"
	"minik8s.io/shared/apierror"
	metricsv1beta1 "minik8s.io/shared/apis/metrics/v1beta1"
	"minik8s.io/shared/client"
)

type topFlags struct {
	selector      string
	allNamespaces bool
	containers    bool
	sortBy        string
	noHeaders     bool
}

func newTop(o *options) *cobra.Command {
	var f topFlags
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Display resource (CPU/memory) usage",
		Long:  "Display resource (CPU/memory) usage of nodes or pods, from the metrics.k8s.io API.",
	}
	pod := &cobra.Command{
		Use:     "pod [NAME | -l label]",
		Aliases: []string{"pods", "po"},
		Short:   "Display resource (CPU/memory) usage of pods",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.topPods(cmd.Context(), args, f)
		},
	}
	pod.Flags().StringVarP(&f.selector, "selector", "l", "", "Selector (label query) to filter on")
	pod.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "List the requested object(s) across all namespaces")
	pod.Flags().BoolVar(&f.containers, "containers", false, "Print usage of containers within a pod")
	pod.Flags().StringVar(&f.sortBy, "sort-by", "", "Sort by cpu or memory")
	pod.Flags().BoolVar(&f.noHeaders, "no-headers", false, "Don't print headers")
	node := &cobra.Command{
		Use:     "node [NAME | -l label]",
		Aliases: []string{"nodes", "no"},
		Short:   "Display resource (CPU/memory) usage of nodes",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.topNodes(cmd.Context(), args, f)
		},
	}
	node.Flags().StringVarP(&f.selector, "selector", "l", "", "Selector (label query) to filter on")
	node.Flags().StringVar(&f.sortBy, "sort-by", "", "Sort by cpu or memory")
	node.Flags().BoolVar(&f.noHeaders, "no-headers", false, "Don't print headers")
	cmd.AddCommand(pod, node)
	return cmd
}

var errNoMetrics = errors.New("metrics not available yet")

// metricsGet reads below /apis/metrics.k8s.io/v1beta1; a server without the API is "Metrics
// API not available", as kubectl says.
func metricsGet(ctx context.Context, cl *client.Client, path, selector string, out any) error {
	req := cl.Get().AbsPath("/apis/" + metricsv1beta1.SchemeGroupVersion.String() + "/" + path)
	if selector != "" {
		req = req.Param("labelSelector", selector)
	}
	err := req.Into(ctx, out)
	if errors.Is(err, apierror.ErrNotFound) && path != "" {
		var list metav1.APIResourceList
		if cl.Get().AbsPath("/apis/"+metricsv1beta1.SchemeGroupVersion.String()).Into(ctx, &list) != nil {
			return errors.New("Metrics API not available")
		}
	}
	return err
}

func checkSort(by string) error {
	if by != "" && by != "cpu" && by != "memory" {
		return fmt.Errorf("--sort-by accepts only cpu or memory")
	}
	return nil
}

func (o *options) topPods(ctx context.Context, args []string, f topFlags) error {
	if err := checkSort(f.sortBy); err != nil {
		return err
	}
	if _, err := labels.Parse(f.selector); err != nil {
		return fmt.Errorf("unable to parse selector %q: %w", f.selector, err)
	}
	cl, err := o.client()
	if err != nil {
		return err
	}
	ns := o.ns()
	path := "namespaces/" + ns + "/pods"
	if f.allNamespaces {
		path = "pods"
	}
	var items []metricsv1beta1.PodMetrics
	if len(args) == 1 {
		var pm metricsv1beta1.PodMetrics
		if err := metricsGet(ctx, cl, path+"/"+args[0], "", &pm); err != nil {
			if errors.Is(err, apierror.ErrNotFound) {
				return fmt.Errorf("podmetrics.metrics.k8s.io %q not found", args[0])
			}
			return err
		}
		items = []metricsv1beta1.PodMetrics{pm}
	} else {
		var list metricsv1beta1.PodMetricsList
		if err := metricsGet(ctx, cl, path, f.selector, &list); err != nil {
			return err
		}
		items = list.Items
	}
	if len(items) == 0 {
		pods, err := client.MustFor[*corev1.Pod, *corev1.PodList](cl).List(ctx, map[bool]string{true: "", false: ns}[f.allNamespaces], metav1.ListOptions{LabelSelector: f.selector})
		if err == nil && len(pods.Items) == 0 {
			if f.allNamespaces {
				fmt.Fprintln(o.ErrOut, "No resources found")
			} else {
				fmt.Fprintf(o.ErrOut, "No resources found in %s namespace.\n", ns)
			}
			return nil
		}
		return errNoMetrics
	}
	usage := func(m metricsv1beta1.PodMetrics) (cpu, mem int64) {
		for _, c := range m.Containers {
			cpu += c.Usage.Cpu().MilliValue()
			mem += c.Usage.Memory().Value()
		}
		return cpu, mem
	}
	sortUsage(items, f.sortBy, usage)
	var lines [][]string
	if !f.noHeaders {
		var h []string
		if f.allNamespaces {
			h = append(h, "NAMESPACE")
		}
		if f.containers {
			h = append(h, "POD")
		}
		h = append(h, "NAME", "CPU(cores)", "MEMORY(bytes)")
		lines = append(lines, h)
	}
	for _, m := range items {
		prefix := []string{}
		if f.allNamespaces {
			prefix = append(prefix, m.Namespace)
		}
		if f.containers {
			for _, c := range m.Containers {
				lines = append(lines, append(append(prefix, m.Name, c.Name), milli(c.Usage.Cpu().MilliValue()), mebi(c.Usage.Memory().Value())))
			}
			continue
		}
		cpu, mem := usage(m)
		lines = append(lines, append(prefix, m.Name, milli(cpu), mebi(mem)))
	}
	return printer.NewAligner(o.Out).Print(lines...)
}

func (o *options) topNodes(ctx context.Context, args []string, f topFlags) error {
	if err := checkSort(f.sortBy); err != nil {
		return err
	}
	cl, err := o.client()
	if err != nil {
		return err
	}
	var items []metricsv1beta1.NodeMetrics
	if len(args) == 1 {
		var nm metricsv1beta1.NodeMetrics
		if err := metricsGet(ctx, cl, "nodes/"+args[0], "", &nm); err != nil {
			if errors.Is(err, apierror.ErrNotFound) {
				return fmt.Errorf("nodemetrics.metrics.k8s.io %q not found", args[0])
			}
			return err
		}
		items = []metricsv1beta1.NodeMetrics{nm}
	} else {
		var list metricsv1beta1.NodeMetricsList
		if err := metricsGet(ctx, cl, "nodes", f.selector, &list); err != nil {
			return err
		}
		items = list.Items
	}
	if len(items) == 0 {
		return errNoMetrics
	}
	nodes, err := client.MustFor[*corev1.Node, *corev1.NodeList](cl).List(ctx, "", metav1.ListOptions{LabelSelector: f.selector})
	if err != nil {
		return err
	}
	alloc := map[string]corev1.ResourceList{}
	for _, n := range nodes.Items {
		alloc[n.Name] = n.Status.Allocatable
		if len(n.Status.Allocatable) == 0 {
			alloc[n.Name] = n.Status.Capacity
		}
	}
	sortUsage(items, f.sortBy, func(m metricsv1beta1.NodeMetrics) (int64, int64) {
		return m.Usage.Cpu().MilliValue(), m.Usage.Memory().Value()
	})
	var lines [][]string
	if !f.noHeaders {
		lines = append(lines, []string{"NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"})
	}
	percent := func(used, of int64) string {
		if of == 0 {
			return "<unknown>"
		}
		return fmt.Sprintf("%d%%", used*100/of)
	}
	for _, m := range items {
		cpu, mem := m.Usage.Cpu().MilliValue(), m.Usage.Memory().Value()
		a := alloc[m.Name]
		lines = append(lines, []string{m.Name, milli(cpu), percent(cpu, a.Cpu().MilliValue()), mebi(mem), percent(mem, a.Memory().Value())})
	}
	return printer.NewAligner(o.Out).Print(lines...)
}

// sortUsage orders items by cpu or memory, highest first; as listed (by name) otherwise.
func sortUsage[T any](items []T, by string, usage func(T) (cpu, mem int64)) {
	if by == "" {
		return
	}
	key := func(t T) int64 {
		c, m := usage(t)
		if by == "memory" {
			return m
		}
		return c
	}
	sort.SliceStable(items, func(i, j int) bool { return key(items[i]) > key(items[j]) })
}

func milli(v int64) string { return fmt.Sprintf("%dm", v) }
func mebi(v int64) string  { return fmt.Sprintf("%dMi", v/(1024*1024)) }
