package deployment

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Annotations Kubernetes' Deployment controller and kubectl read and write.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	// ChangeCauseAnnotation is what kubectl rollout history shows as CHANGE-CAUSE.
	ChangeCauseAnnotation = "kubernetes.io/change-cause"
	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	rollbackToAnnotation  = "deprecated.deployment.rollback.to"
	// maxHistoryChars bounds revision-history, dropping the oldest entries first.
	maxHistoryChars = 2000
)

// notCopied are the Deployment annotations its ReplicaSets do not inherit: they describe the
// Deployment or one ReplicaSet, not the template.
var notCopied = []string{lastAppliedAnnotation, RevisionAnnotation, RevisionHistoryAnnotation,
	DesiredReplicasAnnotation, MaxReplicasAnnotation, rollbackToAnnotation}

// Revision is rs's revision annotation, 0 when missing or not a number.
func Revision(rs *appsv1.ReplicaSet) int64 {
	v, err := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// MaxRevision is the highest revision among rss.
func MaxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		m = max(m, Revision(rs))
	}
	return m
}

// byCreation orders ReplicaSets oldest first, by name among equals.
func byCreation(a, b *appsv1.ReplicaSet) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// FindNew returns the ReplicaSet running d's current template (the oldest, should there be
// several) and the others.
func FindNew(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) {
	sorted := slices.Clone(rss)
	slices.SortFunc(sorted, byCreation)
	for _, rs := range sorted {
		if newRS == nil && EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}

// setNewRSAnnotations brings rs's annotations to what the new ReplicaSet of d at revision
// carries: d's own (those it passes on), the revision, and when an older ReplicaSet becomes
// new again (a rollback), its previous revisions in revision-history. A ReplicaSet about to be
// created also records the replica counts it was made for. It reports a change.
func setNewRSAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, revision int64, exists bool) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range d.Annotations {
		if slices.Contains(notCopied, k) || rs.Annotations[k] == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	oldText, had := rs.Annotations[RevisionAnnotation]
	old, err := strconv.ParseInt(oldText, 10, 64)
	if err != nil && oldText != "" {
		return changed
	}
	if old < revision {
		rs.Annotations[RevisionAnnotation] = strconv.FormatInt(revision, 10)
		changed = true
		if had {
			rs.Annotations[RevisionHistoryAnnotation] = appendHistory(rs.Annotations[RevisionHistoryAnnotation], oldText)
		}
	}
	if !exists && setReplicasAnnotations(rs, replicas(d), replicas(d)+MaxSurge(d)) {
		changed = true
	}
	return changed
}

// appendHistory adds rev to a comma-separated history, dropping the oldest entries to stay
// within maxHistoryChars.
func appendHistory(history, rev string) string {
	if history == "" {
		return rev
	}
	parts := append(strings.Split(history, ","), rev)
	for len(parts) > 1 && len(strings.Join(parts, ",")) > maxHistoryChars {
		parts = parts[1:]
	}
	return strings.Join(parts, ",")
}

// setReplicasAnnotations records on rs the Deployment size and the most pods it may run that
// it was last scaled for (proportional scaling reads them); it reports a change.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desired)), strconv.Itoa(int(maxReplicas))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation], rs.Annotations[MaxReplicasAnnotation] = d, m
	return true
}

func annotatedInt(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, err := strconv.ParseInt(rs.Annotations[key], 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(v), true
}

// NewReplicaSet is the ReplicaSet d's current template gets: named after the template's hash,
// which it adds to the template's labels and to the selector, owned by d, at revision.
func NewReplicaSet(d *appsv1.Deployment, revision int64) *appsv1.ReplicaSet {
	tmpl := d.Spec.Template.DeepCopy()
	hash := TemplateHash(&d.Spec.Template, d.Status.CollisionCount)
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[HashLabel] = hash
	sel := d.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[HashLabel] = hash
	zero := int32(0)
	rs := &appsv1.ReplicaSet{}
	rs.Name, rs.Namespace = d.Name+"-"+hash, d.Namespace
	rs.Labels = tmpl.Labels
	rs.OwnerReferences = append(rs.OwnerReferences, ownerRef(d))
	rs.Spec = appsv1.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: *tmpl}
	setNewRSAnnotations(d, rs, revision, false)
	return rs
}

// TemplateForRollback is the template a Deployment gets back when it is rolled back to rs:
// rs's without the hash label.
func TemplateForRollback(rs *appsv1.ReplicaSet) corev1.PodTemplateSpec {
	t := rs.Spec.Template.DeepCopy()
	delete(t.Labels, HashLabel)
	return *t
}
