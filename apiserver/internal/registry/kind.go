package registry

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/allocator"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
	"minik8s.io/shared/scheme"
)

// Kind is everything the API server does differently for one kind, said in one place: the
// kind's file in this package, which registers it (see register). T is the kind's Go type,
// *corev1.Pod say. A hook left nil does what suits most kinds, as each says.
type Kind[T runtime.Object] struct {
	// Resource is how the kind is served: group, version, names, scope and subresources.
	Resource *scheme.Resource

	// PrepareForCreate sets on a new object what the server decides instead of the client,
	// before defaults. nil clears the status where a status subresource owns it.
	PrepareForCreate func(obj T)
	// PrepareForUpdate carries over from old, on an update of the main endpoint, what only a
	// subresource changes besides status (a pod's ephemeral containers).
	PrepareForUpdate func(obj, old T)
	// Canonicalize folds write-only conveniences into the stored form, on create and update.
	Canonicalize func(obj T)
	// Default fills defaults, on create and update.
	Default func(obj T)
	// Admit checks a new object against the rest of the cluster and completes it from there,
	// after Default and before Validation, as Kubernetes' mutating admission does on create (a
	// pod's service account must exist, and lends it its token volume).
	Admit func(ctx context.Context, r *Registry, obj T) error
	// KeepOnUpdate carries into an update, before Default, what the server set before and a
	// replacing client leaves out (allocated addresses, a generated selector).
	KeepOnUpdate func(obj, old T)
	// Validation checks the name and spec on create and update, and what may not change.
	Validation validation.Rules[T]
	// VersionValidation checks, besides Validation, a write made through served, another
	// version of the kind (one of scheme.OtherVersions); old is the zero T on create. Kubernetes
	// holds events written through events.k8s.io to stricter rules than core ones.
	VersionValidation func(served *scheme.Resource, obj, old T) field.ErrorList
	// Fields are what a field selector may name besides metadata.name and
	// metadata.namespace, with obj's values.
	Fields func(obj T) fields.Set
	// Table is how kubectl get shows the kind; the name and creation time when zero.
	Table tables.Printer

	// Allocates says objects hold what the allocator hands out: a Service's cluster IPs and
	// node ports, a Node's pod CIDR.
	Allocates bool
	// CheckDelete refuses a deletion outright (a protected namespace).
	CheckDelete func(name string) error
	// GracePeriod is how long obj may take to go away once deleted; nil deletes at once.
	GracePeriod func(obj T, opts *metav1.DeleteOptions) int64
	// GCPolicy is what happens to dependents when a delete does not say.
	GCPolicy GCPolicy
	// Finalizing reports whether obj waits for something besides metadata.finalizers before
	// it may go (a namespace with content to remove).
	Finalizing func(obj T) bool
	// MarkDeleting records on obj that deletion has begun (a namespace turns Terminating).
	MarkDeleting func(obj T)
}

// registration is a registered Kind of any type.
type registration interface {
	strategy(alloc *allocator.Allocator) Strategy
}

// kinds holds every registered kind by its resource; register fills it as the program starts.
var kinds = map[*scheme.Resource]registration{}

// register makes k the kind of k.Resource for every Registry, and its Table what tables.For
// shows. It panics on a second kind for a resource, or a resource whose objects are not T.
func register[T runtime.Object](k Kind[T]) Kind[T] {
	if _, ok := k.Resource.New().(T); !ok {
		panic(fmt.Sprintf("registry: %s objects are %T, not the type of their kind", k.Resource.Plural, k.Resource.New()))
	}
	if _, dup := kinds[k.Resource]; dup {
		panic("registry: two kinds registered for " + k.Resource.Plural)
	}
	kinds[k.Resource] = k
	if k.Table.Row != nil {
		tables.Register(k.Resource.GVK.GroupKind(), k.Table)
	}
	return k
}

// served is the resource of scheme.Resources named plural.
func served(plural string) *scheme.Resource {
	for _, r := range scheme.Resources {
		if r.Plural == plural {
			return r
		}
	}
	panic("registry: no served resource " + plural)
}

func (k Kind[T]) strategy(alloc *allocator.Allocator) Strategy {
	return kindStrategy[T]{k: k, alloc: alloc}
}

// strategies builds the Strategy of every registered kind.
func strategies(alloc *allocator.Allocator) map[*scheme.Resource]Strategy {
	out := make(map[*scheme.Resource]Strategy, len(kinds))
	for res, k := range kinds {
		out[res] = k.strategy(alloc)
	}
	return out
}
