package registry

import (
	"context"
	"crypto/rand"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// maxRetries bounds how often a write re-reads after losing a race, or draws another
// generated name.
const maxRetries = 8

// Written is an object as a write left it, with its stored form when it was stored.
type Written struct {
	Object runtime.Object
	// Stored is the stored JSON (without resourceVersion) and Revision its resourceVersion;
	// Stored is nil for a dry run or when nothing was written.
	Stored   []byte
	Revision int64
}

// nameAlphabet avoids vowels and look-alike characters, as Kubernetes' generated names do.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// maxGeneratedNameLength is how much of generateName a generated name keeps, as Kubernetes:
// with the five-character suffix, the name fits a 63-character DNS label.
const maxGeneratedNameLength = 63 - 5

// GenerateName is a name made from a generateName base: the base, cut to
// maxGeneratedNameLength, and a random suffix, as Kubernetes' name generator makes them.
func GenerateName(base string) string {
	if len(base) > maxGeneratedNameLength {
		base = base[:maxGeneratedNameLength]
	}
	return base + RandomSuffix()
}

// RandomSuffix is five characters for a generated name.
func RandomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = nameAlphabet[int(b[i])%len(nameAlphabet)]
	}
	return string(b)
}

func invalid(res *scheme.Resource, name string, errs field.ErrorList) error {
	return apierror.Invalid(res.GVK.Group, res.GVK.Kind, name, errs)
}

// Create stores obj as a new object of k.Resource in k.Namespace; the object names itself
// (metadata.name or generateName). A dry run does everything but reserve and write.
func (r *Registry) Create(ctx context.Context, k Key, obj runtime.Object, dry bool) (Written, error) {
	res := k.Resource
	if res.Namespaced && k.Namespace == "" {
		return Written{}, apierror.New(apierror.ErrMethodNotAllowed, "the server does not allow this method on the requested resource (POST %s)", res.Plural)
	}
	m, err := metaOf(obj)
	if err != nil {
		return Written{}, err
	}
	if res.Namespaced {
		if m.GetNamespace() != "" && m.GetNamespace() != k.Namespace {
			return Written{}, apierror.New(apierror.ErrBadRequest, "the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", m.GetNamespace(), k.Namespace)
		}
		m.SetNamespace(k.Namespace)
	} else {
		m.SetNamespace("")
	}
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	if m.GetName() == "" && !generated {
		return Written{}, invalid(res, "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	if res.Namespaced {
		if err := r.ns.admit(ctx, k.Namespace); err != nil {
			return Written{}, err
		}
	}
	if res.Custom && r.custom.terminating(res.GVR()) {
		return Written{}, apierror.New(apierror.ErrMethodNotAllowed, "create not allowed while custom resource definition is terminating")
	}
	st := r.strategy(res)
	now := metav1.NewTime(r.now().Truncate(1e9))
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(now)
	m.SetResourceVersion("")
	m.SetGeneration(1)
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	st.Canonicalize(obj)
	st.PrepareForCreate(obj)
	st.Default(obj)
	if err := st.Admit(ctx, r, obj); err != nil {
		return Written{}, err
	}
	written := false
	if !dry {
		undo, err := st.Allocate(ctx, nil, obj)
		if err != nil {
			return Written{}, err
		}
		defer func() {
			if !written {
				undo()
			}
		}()
	}
	for attempt := 0; ; attempt++ {
		if generated {
			m.SetName(GenerateName(m.GetGenerateName()))
		}
		if r.admit != nil && attempt == 0 {
			if err := r.admit(admitting(ctx, dry), OpCreate, Key{Resource: res, Namespace: k.Namespace, Name: m.GetName()}, "", obj, nil); err != nil {
				return Written{}, err
			}
		}
		if errs := append(append(st.Validate(obj), st.ValidateNew(obj)...), st.ValidateVersion(k.Served, obj, nil)...); len(errs) > 0 {
			return Written{}, invalid(res, m.GetName(), errs)
		}
		if attempt == 0 {
			if err := r.callAdmitValidated(ctx, dry, OpCreate, Key{Resource: res, Namespace: k.Namespace, Name: m.GetName()}, "", obj, nil); err != nil {
				return Written{}, err
			}
			release, err := r.admitValid(ctx, OpCreate, Key{Resource: res, Namespace: k.Namespace, Name: m.GetName()}, obj, nil, dry)
			if err != nil {
				return Written{}, err
			}
			defer func() {
				if !written {
					release()
				}
			}()
		}
		if dry {
			return Written{Object: obj}, nil
		}
		stored, err := EncodeStored(obj, res)
		if err != nil {
			return Written{}, err
		}
		key := Key{Resource: res, Namespace: k.Namespace, Name: m.GetName()}
		rev, err := r.store.Create(ctx, storageKey(key), stored)
		if errors.Is(err, storage.ErrKeyExists) {
			if generated && attempt < maxRetries {
				continue
			}
			return Written{}, apierror.AlreadyExists(res.GVK.Group, res.Plural, m.GetName())
		}
		if err != nil {
			return Written{}, storeErr(err)
		}
		written = true
		m.SetResourceVersion(formatRV(rev))
		r.afterWrite(ctx, key, obj, true)
		return Written{Object: obj, Stored: stored, Revision: rev}, nil
	}
}

// afterWrite lets background work react to a committed change; created is set for creates.
func (r *Registry) afterWrite(ctx context.Context, k Key, obj runtime.Object, created bool) {
	if r.changed != nil {
		r.changed(k)
	}
	if k.Resource.Custom {
		return
	}
	switch k.Resource.Plural {
	case "namespaces":
		r.ns.changed(ctx, obj, created)
	case "serviceaccounts":
		r.ns.serviceAccountChanged(k, obj)
	case "resourcequotas", "limitranges":
		r.policyChanged(k)
	case "customresourcedefinitions":
		r.definitionChanged(obj)
	}
}
