package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/kubectl/internal/printer"
	"minik8s.io/shared/client"
)

// Annotations the Deployment controller writes and kubectl reads, Kubernetes' names.
const (
	revisionAnnotation        = "deployment.kubernetes.io/revision"
	revisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	desiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	maxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	changeCauseAnnotation     = "kubernetes.io/change-cause"
	restartedAtAnnotation     = "kubectl.kubernetes.io/restartedAt"
	lastAppliedAnnotation     = "kubectl.kubernetes.io/last-applied-configuration"
)

// rollbackSkipped are the annotations a rollback keeps from the Deployment rather than
// taking from the ReplicaSet: they describe the object, not the template.
var rollbackSkipped = []string{lastAppliedAnnotation, revisionAnnotation, revisionHistoryAnnotation,
	desiredReplicasAnnotation, maxReplicasAnnotation, appsv1.DeprecatedRollbackTo}

func newRollout(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Manage the rollout of a resource",
		Long:  "Manage the rollout of one or many resources. Valid resource types include: deployments, daemonsets, statefulsets.",
	}
	cmd.AddCommand(newRolloutStatus(o), newRolloutHistory(o), newRolloutUndo(o),
		newRolloutPauseResume(o, true), newRolloutPauseResume(o, false), newRolloutRestart(o))
	return cmd
}

// deploymentArg resolves the one deployment a rollout subcommand names ("deployment/web",
// "deploy web").
func (o *options) deploymentArg(ctx context.Context, args []string) (*client.Typed[*appsv1.Deployment, *appsv1.DeploymentList], string, string, error) {
	targets, err := o.parseTargets(ctx, args)
	if err != nil {
		return nil, "", "", err
	}
	if len(targets) != 1 || len(targets[0].names) != 1 {
		return nil, "", "", errors.New("required resource not specified: give exactly one TYPE/NAME")
	}
	t := targets[0]
	if t.res.GVK.Kind != "Deployment" {
		return nil, "", "", fmt.Errorf("no rollout support for %s (only deployments)", printer.KindName(t.res.GVK))
	}
	cl, err := o.client()
	if err != nil {
		return nil, "", "", err
	}
	return client.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](cl), o.requestNS(t.res, false), t.names[0], nil
}

// RolloutStatus is what kubectl rollout status says of d: a line, whether the rollout is
// done, and an error when it can no longer finish (its progress deadline passed).
func RolloutStatus(d *appsv1.Deployment) (string, bool, error) {
	if d.Generation > d.Status.ObservedGeneration {
		return "Waiting for deployment spec update to be observed...\n", false, nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return "", false, fmt.Errorf("deployment %q exceeded its progress deadline", d.Name)
		}
	}
	st := d.Status
	switch {
	case d.Spec.Replicas != nil && st.UpdatedReplicas < *d.Spec.Replicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...\n", d.Name, st.UpdatedReplicas, *d.Spec.Replicas), false, nil
	case st.Replicas > st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...\n", d.Name, st.Replicas-st.UpdatedReplicas), false, nil
	case st.AvailableReplicas < st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...\n", d.Name, st.AvailableReplicas, st.UpdatedReplicas), false, nil
	}
	return fmt.Sprintf("deployment %q successfully rolled out\n", d.Name), true, nil
}

func newRolloutStatus(o *options) *cobra.Command {
	var (
		watchFlag bool
		revision  int64
		timeout   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Show the status of the rollout",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			if t, ok, err := o.revisionArg(args); ok || err != nil {
				if err != nil {
					return err
				}
				return o.workloadStatusLoop(ctx, t, watchFlag)
			}
			ds, ns, name, err := o.deploymentArg(cmd.Context(), args)
			if err != nil {
				return err
			}
			last := ""
			// check prints d's status line when it changed and reports whether to stop.
			check := func(d *appsv1.Deployment) (bool, error) {
				if revision > 0 {
					rev, _ := strconv.ParseInt(d.Annotations[revisionAnnotation], 10, 64)
					if rev != revision {
						return false, fmt.Errorf("desired revision (%d) is different from the running revision (%d)", revision, rev)
					}
				}
				msg, done, err := RolloutStatus(d)
				if err != nil {
					return false, err
				}
				if msg != last {
					fmt.Fprint(o.Out, msg)
					last = msg
				}
				return done || !watchFlag, nil
			}
			for {
				d, err := ds.Get(ctx, ns, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if stop, err := check(d); stop || err != nil {
					return err
				}
				w, err := ds.Watch(ctx, ns, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: d.ResourceVersion})
				if err != nil {
					return err
				}
				stop, err := o.watchRollout(ctx, w, check)
				w.Stop()
				if stop || err != nil {
					if errors.Is(err, context.DeadlineExceeded) {
						return errors.New("timed out waiting for the condition")
					}
					return err
				}
				// The watch ended (a server timeout): read again and watch again.
			}
		},
	}
	cmd.Flags().BoolVarP(&watchFlag, "watch", "w", true, "Watch the status of the rollout until it's done.")
	cmd.Flags().Int64Var(&revision, "revision", 0, "Pin to a specific revision for showing its status. Defaults to 0 (last revision).")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "The length of time to wait before ending watch, zero means never.")
	return cmd
}

func (o *options) watchRollout(ctx context.Context, w watch.Interface, check func(*appsv1.Deployment) (bool, error)) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return false, errors.New("deployment was deleted while waiting for its rollout")
			case watch.Error:
				return false, nil // e.g. 410 Gone: read again
			}
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			if stop, err := check(d); stop || err != nil {
				return stop, err
			}
		}
	}
}

// ownedReplicaSets are the ReplicaSets d controls, listed by its selector as kubectl does.
func ownedReplicaSets(ctx context.Context, cl *client.Client, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	list, err := client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](cl).List(ctx, d.Namespace, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ReplicaSet
	for i := range list.Items {
		rs := &list.Items[i]
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == d.UID {
			out = append(out, rs)
		}
	}
	return out, nil
}

func revisionOf(rs *appsv1.ReplicaSet) int64 {
	v, _ := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64)
	return v
}

// History is kubectl rollout history's table: one line per revision, oldest first.
func History(w io.Writer, kindName string, rss []*appsv1.ReplicaSet) {
	type row struct {
		rev   int64
		cause string
	}
	var rows []row
	for _, rs := range rss {
		if rev := revisionOf(rs); rev > 0 {
			rows = append(rows, row{rev, orNoneCause(rs.Annotations[changeCauseAnnotation])})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return int(a.rev - b.rev) })
	fmt.Fprintf(w, "%s \n", kindName)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\n", r.rev, r.cause)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
}

func orNoneCause(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// ForRevision finds the ReplicaSet of revision rev, or with rev 0 the one before the
// current (highest) revision, as kubectl rollout undo does.
func ForRevision(rss []*appsv1.ReplicaSet, rev int64) (*appsv1.ReplicaSet, error) {
	var latest, previous *appsv1.ReplicaSet
	for _, rs := range rss {
		r := revisionOf(rs)
		if rev > 0 {
			if r == rev {
				return rs, nil
			}
			continue
		}
		switch {
		case latest == nil || r > revisionOf(latest):
			previous, latest = latest, rs
		case previous == nil || r > revisionOf(previous):
			previous = rs
		}
	}
	if rev > 0 {
		return nil, fmt.Errorf("unable to find specified revision %d in history", rev)
	}
	if previous == nil || revisionOf(previous) == 0 {
		return nil, errors.New("no rollout history found for deployment")
	}
	return previous, nil
}

// RollbackPatch is the JSON patch kubectl sends to roll d back to rs: rs's template without
// its pod-template-hash label, and rs's annotations but the ones that describe d itself.
// It returns nil when d already runs that template.
func RollbackPatch(d *appsv1.Deployment, rs *appsv1.ReplicaSet) ([]byte, error) {
	tmpl := rs.Spec.Template.DeepCopy()
	delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	if apiequality.Semantic.DeepEqual(tmpl, &d.Spec.Template) {
		return nil, nil
	}
	annotations := map[string]string{}
	for _, k := range rollbackSkipped {
		if v, ok := d.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	for k, v := range rs.Annotations {
		if !slices.Contains(rollbackSkipped, k) {
			annotations[k] = v
		}
	}
	return json.Marshal([]map[string]any{
		{"op": "replace", "path": "/spec/template", "value": tmpl},
		{"op": "replace", "path": "/metadata/annotations", "value": annotations},
	})
}

func newRolloutHistory(o *options) *cobra.Command {
	var revision int64
	cmd := &cobra.Command{
		Use:   "history (TYPE NAME | TYPE/NAME) [flags]",
		Short: "View rollout history",
		RunE: func(cmd *cobra.Command, args []string) error {
			if t, ok, err := o.revisionArg(args); ok || err != nil {
				if err != nil {
					return err
				}
				return o.rolloutHistoryOf(cmd.Context(), t, revision)
			}
			ds, ns, name, err := o.deploymentArg(cmd.Context(), args)
			if err != nil {
				return err
			}
			d, err := ds.Get(cmd.Context(), ns, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			rss, err := ownedReplicaSets(cmd.Context(), o.cl, d)
			if err != nil {
				return err
			}
			kn := "deployment.apps/" + d.Name
			if revision == 0 {
				History(o.Out, kn, rss)
				return nil
			}
			rs, err := ForRevision(rss, revision)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s with revision #%d\n", kn, revision)
			printTemplate(o.Out, &rs.Spec.Template)
			return nil
		},
	}
	cmd.Flags().Int64Var(&revision, "revision", 0, "See the details, including podTemplate of the revision specified")
	return cmd
}

// printTemplate prints a pod template as kubectl rollout history --revision does (its
// describe lines, tab-separated as it writes them).
func printTemplate(w io.Writer, t *corev1.PodTemplateSpec) {
	fmt.Fprintln(w, "Pod Template:")
	keys := make([]string, 0, len(t.Labels))
	for k := range t.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		fmt.Fprintln(w, "  Labels:\t<none>")
	}
	for i, k := range keys {
		if i == 0 {
			fmt.Fprintf(w, "  Labels:\t%s=%s\n", k, t.Labels[k])
		} else {
			fmt.Fprintf(w, "\t%s=%s\n", k, t.Labels[k])
		}
	}
	akeys := make([]string, 0, len(t.Annotations))
	for k := range t.Annotations {
		akeys = append(akeys, k)
	}
	slices.Sort(akeys)
	for i, k := range akeys {
		if i == 0 {
			fmt.Fprintf(w, "  Annotations:\t%s: %s\n", k, t.Annotations[k])
		} else {
			fmt.Fprintf(w, "\t%s: %s\n", k, t.Annotations[k])
		}
	}
	fmt.Fprintln(w, "  Containers:")
	for _, c := range t.Spec.Containers {
		fmt.Fprintf(w, "   %s:\n", c.Name)
		fmt.Fprintf(w, "    Image:\t%s\n", c.Image)
		if len(c.Ports) == 0 {
			fmt.Fprintln(w, "    Port:\t<none>")
			fmt.Fprintln(w, "    Host Port:\t<none>")
		}
		for _, p := range c.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			fmt.Fprintf(w, "    Port:\t%d/%s\n", p.ContainerPort, proto)
			fmt.Fprintf(w, "    Host Port:\t%d/%s\n", p.HostPort, proto)
		}
		if len(c.Env) == 0 {
			fmt.Fprintln(w, "    Environment:\t<none>")
		} else {
			fmt.Fprintln(w, "    Environment:")
			for _, e := range c.Env {
				fmt.Fprintf(w, "      %s:\t%s\n", e.Name, e.Value)
			}
		}
		fmt.Fprintln(w, "    Mounts:\t<none>")
	}
	fmt.Fprintln(w, "  Volumes:\t<none>")
	fmt.Fprintln(w, "  Node-Selectors:\t<none>")
	fmt.Fprintln(w, "  Tolerations:\t<none>")
	fmt.Fprintln(w)
}

func newRolloutUndo(o *options) *cobra.Command {
	var toRevision int64
	cmd := &cobra.Command{
		Use:   "undo (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Undo a previous rollout",
		RunE: func(cmd *cobra.Command, args []string) error {
			if t, ok, err := o.revisionArg(args); ok || err != nil {
				if err != nil {
					return err
				}
				return o.rolloutUndoOf(cmd.Context(), t, toRevision)
			}
			ds, ns, name, err := o.deploymentArg(cmd.Context(), args)
			if err != nil {
				return err
			}
			d, err := ds.Get(cmd.Context(), ns, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Spec.Paused {
				return fmt.Errorf("you cannot rollback a paused deployment; resume it first with 'kubectl rollout resume deployment/%s' and try again", d.Name)
			}
			rss, err := ownedReplicaSets(cmd.Context(), o.cl, d)
			if err != nil {
				return err
			}
			rs, err := ForRevision(rss, toRevision)
			if err != nil {
				return err
			}
			patch, err := RollbackPatch(d, rs)
			if err != nil {
				return err
			}
			if patch == nil {
				fmt.Fprintf(o.Out, "deployment.apps/%s skipped rollback (current template already matches revision %d)\n", d.Name, revisionOf(rs))
				return nil
			}
			if _, err := ds.Patch(cmd.Context(), ns, name, types.JSONPatchType, patch); err != nil {
				return fmt.Errorf("failed restoring revision %d: %w", revisionOf(rs), err)
			}
			fmt.Fprintf(o.Out, "deployment.apps/%s rolled back\n", d.Name)
			return nil
		},
	}
	cmd.Flags().Int64Var(&toRevision, "to-revision", 0, "The revision to rollback to. Default to 0 (last revision).")
	return cmd
}

func newRolloutPauseResume(o *options, pause bool) *cobra.Command {
	verb, done, already := "resume", "resumed", "is not paused"
	if pause {
		verb, done, already = "pause", "paused", "is already paused"
	}
	return &cobra.Command{
		Use:   verb + " RESOURCE",
		Short: map[bool]string{true: "Mark the provided resource as paused", false: "Resume a paused resource"}[pause],
		RunE: func(cmd *cobra.Command, args []string) error {
			if t, ok, err := o.revisionArg(args); ok || err != nil {
				if err != nil {
					return err
				}
				// As upstream: only Deployments pause.
				return fmt.Errorf("%s.apps %q %sing is not supported", t.kind.plural, t.name, strings.TrimSuffix(verb, "e"))
			}
			ds, ns, name, err := o.deploymentArg(cmd.Context(), args)
			if err != nil {
				return err
			}
			d, err := ds.Get(cmd.Context(), ns, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Spec.Paused == pause {
				return fmt.Errorf("deployments.apps %q %s", d.Name, already)
			}
			patch := fmt.Appendf(nil, `{"spec":{"paused":%t}}`, pause)
			if _, err := ds.Patch(cmd.Context(), ns, name, types.StrategicMergePatchType, patch); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "deployment.apps/%s %s\n", d.Name, done)
			return nil
		},
	}
}

func newRolloutRestart(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "restart RESOURCE",
		Short: "Restart a resource",
		RunE: func(cmd *cobra.Command, args []string) error {
			if t, ok, err := o.revisionArg(args); ok || err != nil {
				if err != nil {
					return err
				}
				return o.rolloutRestartOf(cmd.Context(), t)
			}
			ds, ns, name, err := o.deploymentArg(cmd.Context(), args)
			if err != nil {
				return err
			}
			d, err := ds.Get(cmd.Context(), ns, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Spec.Paused {
				return errors.New("can't restart paused deployment (run rollout resume first)")
			}
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
				"annotations": map[string]string{restartedAtAnnotation: time.Now().Format(time.RFC3339)}}}}})
			if err != nil {
				return err
			}
			if _, err := ds.Patch(cmd.Context(), ns, name, types.StrategicMergePatchType, patch); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "deployment.apps/%s restarted\n", d.Name)
			return nil
		},
	}
}
