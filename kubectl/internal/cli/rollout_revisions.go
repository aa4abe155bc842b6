package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/client"
)

// The rollouts of DaemonSets and StatefulSets are told by their ControllerRevisions, as
// kubectl tells them: history lists the revisions, undo sends a revision's data (a strategic
// merge patch that replaces spec.template) back to the object. They go by resource name
// over REST, so StatefulSets need nothing from this binary's scheme.

// revisionKind is a kind whose history is in ControllerRevisions.
type revisionKind struct {
	plural, kind string
	// names are what a user may call it on the command line.
	names []string
}

var revisionKinds = []revisionKind{
	{plural: "daemonsets", kind: "DaemonSet", names: []string{"daemonset", "daemonsets", "ds", "daemonset.apps", "daemonsets.apps"}},
	{plural: "statefulsets", kind: "StatefulSet", names: []string{"statefulset", "statefulsets", "sts", "statefulset.apps", "statefulsets.apps"}},
}

// revisionTarget is the one DaemonSet or StatefulSet a rollout subcommand names.
type revisionTarget struct {
	kind      revisionKind
	namespace string
	name      string
}

// revisionArg reports whether args name a DaemonSet or a StatefulSet, and which.
func (o *options) revisionArg(args []string) (*revisionTarget, bool, error) {
	var typ, name string
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		typ, name, _ = strings.Cut(args[0], "/")
	case len(args) == 2 && !strings.Contains(args[0], "/"):
		typ, name = args[0], args[1]
	default:
		return nil, false, nil
	}
	k := revisionKindOf(typ)
	if k == nil {
		return nil, false, nil
	}
	if name == "" {
		return nil, true, errors.New("required resource not specified: give exactly one TYPE/NAME")
	}
	if _, err := o.client(); err != nil {
		return nil, true, err
	}
	return &revisionTarget{kind: *k, namespace: o.ns(), name: name}, true, nil
}

// revisionKindOf is the kind a type argument names, nil when it is neither a DaemonSet nor a
// StatefulSet.
func revisionKindOf(typ string) *revisionKind {
	typ = strings.ToLower(typ)
	for i := range revisionKinds {
		if slices.Contains(revisionKinds[i].names, typ) {
			return &revisionKinds[i]
		}
	}
	return nil
}

// kindName is how kubectl names the object in its output: daemonset.apps/agent.
func (t *revisionTarget) kindName() string {
	return strings.ToLower(t.kind.kind) + ".apps/" + t.name
}

func (t *revisionTarget) path() string {
	return "/apis/apps/v1/namespaces/" + url.PathEscape(t.namespace) + "/" + t.kind.plural + "/" + url.PathEscape(t.name)
}

// workload is what the rollout commands read of a DaemonSet or a StatefulSet.
type workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              workloadSpec   `json:"spec"`
	Status            workloadStatus `json:"status"`
}

type workloadSpec struct {
	Replicas       *int32                 `json:"replicas,omitempty"`
	Selector       *metav1.LabelSelector  `json:"selector"`
	Template       corev1.PodTemplateSpec `json:"template"`
	UpdateStrategy struct {
		Type          string `json:"type"`
		RollingUpdate *struct {
			Partition *int32 `json:"partition,omitempty"`
		} `json:"rollingUpdate,omitempty"`
	} `json:"updateStrategy"`
}

// workloadStatus has the fields of both statuses.
type workloadStatus struct {
	ObservedGeneration     int64  `json:"observedGeneration"`
	DesiredNumberScheduled int32  `json:"desiredNumberScheduled"`
	UpdatedNumberScheduled int32  `json:"updatedNumberScheduled"`
	NumberAvailable        int32  `json:"numberAvailable"`
	ReadyReplicas          int32  `json:"readyReplicas"`
	UpdatedReplicas        int32  `json:"updatedReplicas"`
	CurrentReplicas        int32  `json:"currentReplicas"`
	CurrentRevision        string `json:"currentRevision"`
	UpdateRevision         string `json:"updateRevision"`
}

func (o *options) getWorkload(ctx context.Context, t *revisionTarget) (*workload, error) {
	var w workload
	if err := o.cl.Get().AbsPath(t.path()).Into(ctx, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// WorkloadStatus is what kubectl rollout status says of a DaemonSet or a StatefulSet: a
// line, whether the rollout is done, and an error for a strategy without rollouts.
func WorkloadStatus(kind string, w *workload) (string, bool, error) {
	rolling := string(appsv1.RollingUpdateDaemonSetStrategyType)
	if w.Spec.UpdateStrategy.Type != rolling {
		return "", true, fmt.Errorf("rollout status is only available for %s strategy type", rolling)
	}
	st := w.Status
	if kind == "DaemonSet" {
		if w.Generation > st.ObservedGeneration {
			return "Waiting for daemon set spec update to be observed...\n", false, nil
		}
		if st.UpdatedNumberScheduled < st.DesiredNumberScheduled {
			return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...\n", w.Name, st.UpdatedNumberScheduled, st.DesiredNumberScheduled), false, nil
		}
		if st.NumberAvailable < st.DesiredNumberScheduled {
			return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...\n", w.Name, st.NumberAvailable, st.DesiredNumberScheduled), false, nil
		}
		return fmt.Sprintf("daemon set %q successfully rolled out\n", w.Name), true, nil
	}
	if st.ObservedGeneration == 0 || w.Generation > st.ObservedGeneration {
		return "Waiting for statefulset spec update to be observed...\n", false, nil
	}
	if r := w.Spec.Replicas; r != nil && st.ReadyReplicas < *r {
		return fmt.Sprintf("Waiting for %d pods to be ready...\n", *r-st.ReadyReplicas), false, nil
	}
	if ru := w.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if r := w.Spec.Replicas; r != nil && ru.Partition != nil && st.UpdatedReplicas < *r-*ru.Partition {
			return fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...\n", st.UpdatedReplicas, *r-*ru.Partition), false, nil
		}
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...\n", st.UpdatedReplicas), true, nil
	}
	if st.UpdateRevision != st.CurrentRevision {
		return fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...\n", st.UpdatedReplicas, st.UpdateRevision), false, nil
	}
	return fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...\n", st.CurrentReplicas, st.CurrentRevision), true, nil
}

// workloadStatusLoop prints the status line each time it changes until the rollout is done
// (or once, without watch). It reads the object every second.
func (o *options) workloadStatusLoop(ctx context.Context, t *revisionTarget, watch bool) error {
	last := ""
	for {
		w, err := o.getWorkload(ctx, t)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return errors.New("timed out waiting for the condition")
			}
			return err
		}
		msg, done, err := WorkloadStatus(t.kind.kind, w)
		if err != nil {
			return err
		}
		if msg != last {
			fmt.Fprint(o.Out, msg)
			last = msg
		}
		if done || !watch {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("timed out waiting for the condition")
		case <-time.After(time.Second):
		}
	}
}

// revisionsOf are the ControllerRevisions w controls, found by its selector as kubectl does.
func (o *options) revisionsOf(ctx context.Context, w *workload) ([]*appsv1.ControllerRevision, error) {
	sel, err := metav1.LabelSelectorAsSelector(w.Spec.Selector)
	if err != nil {
		return nil, err
	}
	list, err := client.MustFor[*appsv1.ControllerRevision, *appsv1.ControllerRevisionList](o.cl).List(ctx, w.Namespace, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ControllerRevision
	for i := range list.Items {
		r := &list.Items[i]
		if ref := metav1.GetControllerOf(r); ref != nil && ref.UID == w.UID {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
	return out, nil
}

// RevisionHistory is kubectl rollout history's table of ControllerRevisions.
func RevisionHistory(w io.Writer, kindName string, revs []*appsv1.ControllerRevision) {
	if len(revs) == 0 {
		fmt.Fprintf(w, "%s \nNo rollout history found.\n", kindName)
		return
	}
	fmt.Fprintf(w, "%s \n", kindName)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
	for _, r := range revs {
		fmt.Fprintf(tw, "%d\t%s\n", r.Revision, orNoneCause(r.Annotations[changeCauseAnnotation]))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
}

// RevisionTemplate is the pod template a revision holds.
func RevisionTemplate(r *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template json.RawMessage `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(r.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("controllerrevision %s: %w", r.Name, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data.Spec.Template, &raw); err != nil {
		return nil, fmt.Errorf("controllerrevision %s holds no template: %w", r.Name, err)
	}
	delete(raw, "$patch")
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var t corev1.PodTemplateSpec
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&t); err != nil {
		return nil, err
	}
	return &t, nil
}

// UndoTarget is the revision kubectl rollout undo restores: toRevision, or with 0 the one
// before the latest.
func UndoTarget(revs []*appsv1.ControllerRevision, toRevision int64) (*appsv1.ControllerRevision, error) {
	if toRevision == 0 && len(revs) <= 1 {
		return nil, errors.New("no last revision to roll back to")
	}
	sorted := slices.Clone(revs)
	slices.SortFunc(sorted, func(a, b *appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
	if toRevision == 0 {
		return sorted[len(sorted)-2], nil
	}
	for _, r := range sorted {
		if r.Revision == toRevision {
			return r, nil
		}
	}
	return nil, fmt.Errorf("unable to find specified revision %v in history", toRevision)
}

func (o *options) rolloutHistoryOf(ctx context.Context, t *revisionTarget, revision int64) error {
	w, err := o.getWorkload(ctx, t)
	if err != nil {
		return err
	}
	revs, err := o.revisionsOf(ctx, w)
	if err != nil {
		return err
	}
	if revision == 0 {
		RevisionHistory(o.Out, t.kindName(), revs)
		return nil
	}
	for _, r := range revs {
		if r.Revision == revision {
			tmpl, err := RevisionTemplate(r)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s with revision #%d\n", t.kindName(), revision)
			printTemplate(o.Out, tmpl)
			return nil
		}
	}
	return errors.New("unable to find the specified revision")
}

func (o *options) rolloutUndoOf(ctx context.Context, t *revisionTarget, toRevision int64) error {
	w, err := o.getWorkload(ctx, t)
	if err != nil {
		return err
	}
	revs, err := o.revisionsOf(ctx, w)
	if err != nil {
		return err
	}
	r, err := UndoTarget(revs, toRevision)
	if err != nil {
		return err
	}
	tmpl, err := RevisionTemplate(r)
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(tmpl, &w.Spec.Template) {
		fmt.Fprintf(o.Out, "%s skipped rollback (current template already matches revision %d)\n", t.kindName(), toRevision)
		return nil
	}
	if _, err := o.cl.Patch(string(types.StrategicMergePatchType)).AbsPath(t.path()).Body(r.Data.Raw).Do(ctx); err != nil {
		return fmt.Errorf("failed restoring revision %d: %w", toRevision, err)
	}
	fmt.Fprintf(o.Out, "%s rolled back\n", t.kindName())
	return nil
}

func (o *options) rolloutRestartOf(ctx context.Context, t *revisionTarget) error {
	w, err := o.getWorkload(ctx, t)
	if err != nil {
		return err
	}
	if w.Spec.UpdateStrategy.Type != string(appsv1.RollingUpdateDaemonSetStrategyType) {
		return fmt.Errorf("can only restart %s with RollingUpdate strategy", t.kind.kind)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{restartedAtAnnotation: time.Now().Format(time.RFC3339)}}}}})
	if err != nil {
		return err
	}
	if _, err := o.cl.Patch(string(types.StrategicMergePatchType)).AbsPath(t.path()).Body(patch).Do(ctx); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "%s restarted\n", t.kindName())
	return nil
}
