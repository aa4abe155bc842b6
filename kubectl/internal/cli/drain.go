package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// newCordon and newUncordon set spec.unschedulable, worded as kubectl words it.
func newCordon(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "cordon NODE",
		Short: "Mark node as unschedulable",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.setUnschedulable(cmd.Context(), args[0], true)
		},
	}
}

func newUncordon(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "uncordon NODE",
		Short: "Mark node as schedulable",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.setUnschedulable(cmd.Context(), args[0], false)
		},
	}
}

func (o *options) setUnschedulable(ctx context.Context, name string, on bool) error {
	cl, err := o.client()
	if err != nil {
		return err
	}
	nodes := client.MustFor[*corev1.Node, *corev1.NodeList](cl)
	n, err := nodes.Get(ctx, "", name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	verb := "cordoned"
	if !on {
		verb = "uncordoned"
	}
	if n.Spec.Unschedulable == on {
		fmt.Fprintf(o.Out, "node/%s already %s\n", name, verb)
		return nil
	}
	// A merge patch touches only this field, so it never fights the kubelet's status writes.
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := nodes.Patch(ctx, "", name, types.MergePatchType, []byte(patch)); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "node/%s %s\n", name, verb)
	return nil
}

type drainOptions struct {
	ignoreDaemonSets, force, deleteEmptyDir bool
	gracePeriod                             int
	timeout                                 time.Duration
}

func newDrain(o *options) *cobra.Command {
	var d drainOptions
	cmd := &cobra.Command{
		Use:   "drain NODE [--ignore-daemonsets] [--force] [--grace-period=-1]",
		Short: "Drain node in preparation for maintenance",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.drain(cmd.Context(), args[0], d)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&d.ignoreDaemonSets, "ignore-daemonsets", false, "Ignore DaemonSet-managed pods.")
	f.BoolVar(&d.force, "force", false, "Continue even if there are pods that do not declare a controller.")
	f.BoolVar(&d.deleteEmptyDir, "delete-emptydir-data", false, "Continue even if there are pods using emptyDir (local data that will be deleted when the node is drained).")
	f.IntVar(&d.gracePeriod, "grace-period", -1, "Period of time in seconds given to each pod to terminate gracefully. If negative, the default value specified in the pod will be used.")
	f.DurationVar(&d.timeout, "timeout", 0, "The length of time to wait before giving up, zero means infinite")
	return cmd
}

// drainPlan sorts a node's pods: those to evict, those to skip silently or with a warning,
// and those that block the drain.
type drainPlan struct {
	evict                       []corev1.Pod
	ignoredDaemonSet, unmanaged []string // warnings
	blockDaemonSet, blockBare   []string
	// The pods of DaemonSets that cannot be read, grouped by the error: they block the
	// drain, or when the DaemonSet is gone and --force is given are deleted with a warning,
	// as upstream.
	orphanBlock, orphanWarn podsByMessage
}

// podsByMessage groups pods by a message, in the order the messages came.
type podsByMessage struct {
	messages []string
	pods     map[string][]string
}

func (g *podsByMessage) add(msg, pod string) {
	if g.pods == nil {
		g.pods = map[string][]string{}
	}
	if _, ok := g.pods[msg]; !ok {
		g.messages = append(g.messages, msg)
	}
	g.pods[msg] = append(g.pods[msg], pod)
}

// lines are "message: ns/a, ns/b", one per message.
func (g podsByMessage) lines() []string {
	var out []string
	for _, m := range g.messages {
		out = append(out, m+": "+strings.Join(g.pods[m], ", "))
	}
	return out
}

// planDrain sorts pods; daemonSet reports whether the DaemonSet namespace/name can be read
// (nil when it exists).
func planDrain(pods []corev1.Pod, d drainOptions, daemonSet func(namespace, name string) error) drainPlan {
	var p drainPlan
	for _, pod := range pods {
		name := pod.Namespace + "/" + pod.Name
		if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		// Finished pods hold nothing; deleting them is harmless whoever owns them.
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			p.evict = append(p.evict, pod)
			continue
		}
		ctrl := metav1.GetControllerOf(&pod)
		if ctrl != nil && ctrl.Kind == "DaemonSet" && daemonSet != nil {
			if err := daemonSet(pod.Namespace, ctrl.Name); err != nil {
				if errors.Is(err, apierror.ErrNotFound) && d.force {
					p.orphanWarn.add(err.Error(), name)
					p.evict = append(p.evict, pod)
				} else {
					p.orphanBlock.add(err.Error(), name)
				}
				continue
			}
		}
		switch {
		case ctrl != nil && ctrl.Kind == "DaemonSet" && d.ignoreDaemonSets:
			p.ignoredDaemonSet = append(p.ignoredDaemonSet, name)
		case ctrl != nil && ctrl.Kind == "DaemonSet":
			p.blockDaemonSet = append(p.blockDaemonSet, name)
		case ctrl != nil:
			p.evict = append(p.evict, pod)
		case d.force:
			p.unmanaged = append(p.unmanaged, name)
			p.evict = append(p.evict, pod)
		default:
			p.blockBare = append(p.blockBare, name)
		}
	}
	return p
}

func (o *options) drain(ctx context.Context, name string, d drainOptions) error {
	if err := o.setUnschedulable(ctx, name, true); err != nil {
		return err
	}
	cl, err := o.client()
	if err != nil {
		return err
	}
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](cl)
	list, err := pods.List(ctx, "", metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		return err
	}
	dss := client.MustFor[*appsv1.DaemonSet, *appsv1.DaemonSetList](cl)
	plan := planDrain(list.Items, d, func(ns, name string) error {
		_, err := dss.Get(ctx, ns, name, metav1.GetOptions{})
		return err
	})
	var blocked []string
	for _, line := range plan.orphanBlock.lines() {
		blocked = append(blocked, "cannot delete "+line)
	}
	orphanWarnings := plan.orphanWarn.lines()
	if len(plan.blockBare) > 0 {
		blocked = append(blocked, "cannot delete Pods that declare no controller (use --force to override): "+strings.Join(plan.blockBare, ", "))
	}
	if len(plan.blockDaemonSet) > 0 {
		blocked = append(blocked, "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "+strings.Join(plan.blockDaemonSet, ", "))
	}
	if len(blocked) > 0 {
		fmt.Fprintf(o.ErrOut, "error: unable to drain node %q due to error: %s, continuing command...\n", name, strings.Join(blocked, ", "))
		fmt.Fprintf(o.ErrOut, "There are pending nodes to be drained:\n %s\n", name)
		for _, b := range blocked {
			fmt.Fprintf(o.ErrOut, "error: %s\n", b)
		}
		return errReported
	}
	if len(plan.ignoredDaemonSet)+len(plan.unmanaged)+len(orphanWarnings) > 0 {
		w := orphanWarnings
		if len(plan.ignoredDaemonSet) > 0 {
			w = append(w, "ignoring DaemonSet-managed Pods: "+strings.Join(plan.ignoredDaemonSet, ", "))
		}
		if len(plan.unmanaged) > 0 {
			w = append(w, "deleting Pods that declare no controller: "+strings.Join(plan.unmanaged, ", "))
		}
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", strings.Join(w, "; "))
	}
	opts := metav1.DeleteOptions{}
	if d.gracePeriod >= 0 {
		g := int64(d.gracePeriod)
		opts.GracePeriodSeconds = &g
	}
	if d.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.timeout)
		defer cancel()
	}
	if err := o.evictAll(ctx, cl, plan.evict, opts); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("drain did not complete within %s", d.timeout)
		}
		return err
	}
	if err := waitEvicted(ctx, pods, plan.evict, 0, func(p corev1.Pod) {
		fmt.Fprintf(o.Out, "pod/%s evicted\n", p.Name)
	}); err != nil {
		return fmt.Errorf("drain did not complete within %s: %w", d.timeout, err)
	}
	fmt.Fprintf(o.Out, "node/%s drained\n", name)
	return nil
}

// waitEvicted polls until every pod is gone (or replaced by a new pod of the same name), telling
// gone about each as it goes.
func waitEvicted(ctx context.Context, pods *client.Typed[*corev1.Pod, *corev1.PodList], left []corev1.Pod, timeout time.Duration, gone func(corev1.Pod)) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for {
		var still []corev1.Pod
		for _, p := range left {
			cur, err := pods.Get(ctx, p.Namespace, p.Name, metav1.GetOptions{})
			switch {
			case errors.Is(err, apierror.ErrNotFound) || (err == nil && cur.UID != p.UID):
				gone(p)
			case err != nil && ctx.Err() != nil:
				return ctx.Err()
			default:
				still = append(still, p)
			}
		}
		if len(still) == 0 {
			return nil
		}
		left = still
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
