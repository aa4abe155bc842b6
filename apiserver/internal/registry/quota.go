package registry

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/admission/limitranger"
	"minik8s.io/apiserver/internal/admission/resourcequota"
	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/quota"
)

// quotaLocks serialize the quota charges of a namespace within this apiserver, so its own
// concurrent writes do not lose races against each other; the compare-and-swap of each
// quota's status keeps several apiservers (and the controller) safe.
type quotaLocks [64]sync.Mutex

func (l *quotaLocks) of(namespace string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace))
	return &l[h.Sum32()%uint32(len(l))]
}

// releaseTimeout bounds giving back a charge once the write it was for failed.
const releaseTimeout = 10 * time.Second

// admitValid is the admission of a valid object about to be written, as Kubernetes' validating
// admission plugins: LimitRanger's bounds for pods and claims, then ResourceQuota, which
// charges the write to the namespace's quotas. release gives the charge back; the caller runs
// it when the write does not happen. A dry run is judged and charges nothing.
func (r *Registry) admitValid(ctx context.Context, op Operation, k Key, obj, old runtime.Object, dry bool) (release func(), err error) {
	noop := func() {}
	if !k.Resource.Namespaced || k.Namespace == "" {
		return noop, nil
	}
	if err := r.admitLimitRanges(ctx, op, k, obj, old); err != nil {
		return nil, err
	}
	return r.chargeQuota(ctx, op, k, obj, old, dry)
}

// admitLimitRanges refuses a new pod, or a new or resized claim, outside its namespace's
// LimitRanges. Objects being deleted pass, as in Kubernetes.
func (r *Registry) admitLimitRanges(ctx context.Context, op Operation, k Key, obj, old runtime.Object) error {
	if old != nil {
		if m, err := metaOf(old); err == nil && m.GetDeletionTimestamp() != nil {
			return nil
		}
	}
	var check func(ranges []*corev1.LimitRange) error
	switch o := obj.(type) {
	case *corev1.Pod:
		if op != OpCreate {
			return nil
		}
		check = func(ranges []*corev1.LimitRange) error { return limitranger.ValidatePod(o, ranges) }
	case *corev1.PersistentVolumeClaim:
		check = func(ranges []*corev1.LimitRange) error { return limitranger.ValidateClaim(o, ranges) }
	default:
		return nil
	}
	ranges, err := r.limitRanges(ctx, k.Namespace)
	if err != nil || len(ranges) == 0 {
		return err
	}
	if err := check(ranges); err != nil {
		return apierror.Forbidden(k.Resource.GVK.Group, k.Resource.Plural, k.Name, err.Error())
	}
	return nil
}

// admitLimitRangeDefaults gives a new pod's containers the defaults of its namespace's
// LimitRanges, as the LimitRanger's mutation.
func admitLimitRangeDefaults(ctx context.Context, r *Registry, pod *corev1.Pod) error {
	ranges, err := r.limitRanges(ctx, pod.Namespace)
	if err != nil {
		return err
	}
	limitranger.Default(pod, ranges)
	return nil
}

func (r *Registry) limitRanges(ctx context.Context, namespace string) ([]*corev1.LimitRange, error) {
	return listOf[*corev1.LimitRange](ctx, r, "limitranges", namespace)
}

func (r *Registry) resourceQuotas(ctx context.Context, namespace string) ([]*corev1.ResourceQuota, error) {
	return listOf[*corev1.ResourceQuota](ctx, r, "resourcequotas", namespace)
}

// emptyTTL bounds how long a namespace listed without ResourceQuotas (or LimitRanges) is
// trusted to have none without another read. Writes of either kind through this apiserver
// forget it at once; another apiserver's are seen within emptyTTL (Kubernetes' admission
// trusts its caches' empty answers for 30 s). Most namespaces have neither, and most creates
// then cost no read at all.
const emptyTTL = 2 * time.Second

// emptyPolicies remembers the namespaces last listed without quotas or limit ranges.
type emptyPolicies struct {
	mu      sync.Mutex
	seen    map[string]time.Time // plural + "/" + namespace -> when it was listed empty
	changes uint64               // writes of either kind so far
}

func (e *emptyPolicies) empty(key string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.seen[key]
	return ok && now.Sub(at) < emptyTTL
}

// generation is the count of writes, read before a list.
func (e *emptyPolicies) generation() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changes
}

// listedEmpty records key as listed empty at at, unless a write came since generation gen:
// the list may not have seen it.
func (e *emptyPolicies) listedEmpty(key string, at time.Time, gen uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.changes != gen {
		return
	}
	if e.seen == nil {
		e.seen = map[string]time.Time{}
	}
	e.seen[key] = at
}

func (e *emptyPolicies) changed(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.changes++
	delete(e.seen, key)
}

// policyChanged is told about every ResourceQuota and LimitRange write.
func (r *Registry) policyChanged(k Key) {
	r.emptyPolicies.changed(k.Resource.Plural + "/" + k.Namespace)
}

// listOf lists the objects of the served resource plural in namespace, as their type T; a
// namespace recently seen without any is not read again (emptyTTL).
func listOf[T runtime.Object](ctx context.Context, r *Registry, plural, namespace string) ([]T, error) {
	key := plural + "/" + namespace
	if r.emptyPolicies.empty(key, r.now()) {
		return nil, nil
	}
	at, gen := r.now(), r.emptyPolicies.generation()
	list, err := r.List(ctx, Key{Resource: served(plural), Namespace: namespace}, ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(list.Items))
	for _, obj := range list.Items {
		if t, ok := obj.(T); ok {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		r.emptyPolicies.listedEmpty(key, at, gen)
	}
	return out, nil
}

// chargeQuota raises the status.used of each quota of the namespace that limits the write, as
// Kubernetes' ResourceQuota admission, before the object is written: each quota is rewritten
// only if unchanged since it was read, so two writes racing for the last of a quota cannot
// both have it. A quota that changed is read again and the write judged again against it.
func (r *Registry) chargeQuota(ctx context.Context, op Operation, k Key, obj, old runtime.Object, dry bool) (func(), error) {
	noop := func() {}
	gr := k.Resource.GVR().GroupResource()
	e := quota.For(gr)
	if quota.Ignored(gr) || (op == OpUpdate && !e.ChargesUpdates()) {
		return noop, nil
	}
	quotas, err := r.resourceQuotas(ctx, k.Namespace)
	if err != nil || len(quotas) == 0 {
		return noop, err
	}
	mu := r.quotaLocks.of(k.Namespace)
	mu.Lock()
	defer mu.Unlock()

	var charged []resourcequota.Charge
	release := func() { r.releaseQuota(ctx, k.Namespace, charged) }
	w := resourcequota.Write{Object: obj, Old: old}
	for attempt := 0; ; attempt++ {
		charges, err := resourcequota.Check(quotas, e, w, r.now())
		if err != nil {
			release()
			var refusal *resourcequota.Refusal
			if errors.As(err, &refusal) {
				return nil, apierror.Forbidden(k.Resource.GVK.Group, k.Resource.Plural, k.Name, refusal.Reason)
			}
			return nil, apierror.New(apierror.ErrInternal, "resource quota of %s: %v", k, err)
		}
		if dry {
			return noop, nil
		}
		var lost []string
		for _, c := range charges {
			switch err := r.writeQuotaStatus(ctx, c.Quota); {
			case err == nil:
				charged = append(charged, c)
			case errors.Is(err, storage.ErrRevisionMismatch):
				lost = append(lost, c.Quota.Name)
			case errors.Is(err, storage.ErrKeyNotFound):
				// The quota was deleted meanwhile: it limits nothing any more.
			default:
				release()
				return nil, storeErr(err)
			}
		}
		if len(lost) == 0 {
			return release, nil
		}
		if attempt == maxRetries {
			release()
			return nil, ConflictModified(Key{Resource: served("resourcequotas"), Namespace: k.Namespace, Name: lost[0]})
		}
		// Judge the write again against the quotas that changed under it, as they are now.
		fresh, err := r.resourceQuotas(ctx, k.Namespace)
		if err != nil {
			release()
			return nil, err
		}
		quotas = slices.DeleteFunc(fresh, func(q *corev1.ResourceQuota) bool { return !slices.Contains(lost, q.Name) })
	}
}

// writeQuotaStatus stores q, whose status.used was raised or lowered, if the stored quota is
// still the one q was read from (its resourceVersion).
func (r *Registry) writeQuotaStatus(ctx context.Context, q *corev1.ResourceQuota) error {
	rev, err := strconv.ParseInt(q.ResourceVersion, 10, 64)
	if err != nil {
		return err
	}
	res := served("resourcequotas")
	stored, err := EncodeStored(q, res)
	if err != nil {
		return err
	}
	_, err = r.store.Update(ctx, storageKey(Key{Resource: res, Namespace: q.Namespace, Name: q.Name}), stored, rev)
	return err
}

// releaseQuota gives back what charges added to their quotas, after the write they were for
// did not happen; a quota deleted meanwhile is left alone. What cannot be given back now the
// controller's next recount of the quota frees.
func (r *Registry) releaseQuota(ctx context.Context, namespace string, charges []resourcequota.Charge) {
	if len(charges) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	res := served("resourcequotas")
	for _, c := range charges {
		k := Key{Resource: res, Namespace: namespace, Name: c.Quota.Name}
		for attempt := 0; attempt < maxRetries; attempt++ {
			obj, _, err := r.Read(ctx, k)
			if err != nil {
				if !errors.Is(err, apierror.ErrNotFound) {
					r.log.Warn("giving back a quota charge", "key", k.String(), "err", err)
				}
				break
			}
			q := obj.(*corev1.ResourceQuota)
			q.Status.Used = giveBack(q.Status.Used, c.Delta)
			err = r.writeQuotaStatus(ctx, q)
			if err == nil || errors.Is(err, storage.ErrKeyNotFound) {
				break
			}
			if !errors.Is(err, storage.ErrRevisionMismatch) {
				r.log.Warn("giving back a quota charge", "key", k.String(), "err", err)
				break
			}
		}
	}
}

// giveBack lowers used by delta, never below zero, in the resources used holds.
func giveBack(used, delta corev1.ResourceList) corev1.ResourceList {
	out := used.DeepCopy()
	lowered := quota.SubtractNonNegative(quota.Mask(used, quota.ResourceNames(delta)), delta)
	for name, q := range lowered {
		if _, ok := out[name]; ok {
			out[name] = q
		}
	}
	return out
}
