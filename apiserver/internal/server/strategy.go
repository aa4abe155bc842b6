package server

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/scheme"
)

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("object %T has no metadata: %w", obj, err)
	}
	return m, nil
}

// structField returns the named top-level struct field of a typed object, if it has one.
func structField(obj runtime.Object, name string) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := v.Elem().FieldByName(name)
	return f, f.IsValid()
}

// copyField sets dst.<name> to src.<name>.
func copyField(dst, src runtime.Object, name string) {
	d, ok1 := structField(dst, name)
	s, ok2 := structField(src, name)
	if ok1 && ok2 {
		d.Set(s)
	}
}

// resetField sets obj.<name> to its zero value.
func resetField(obj runtime.Object, name string) {
	if f, ok := structField(obj, name); ok {
		f.Set(reflect.Zero(f.Type()))
	}
}

// specChanged reports whether the spec-like part of an object differs, which bumps generation.
func specChanged(newObj, oldObj runtime.Object) bool {
	for _, name := range []string{"Spec", "Data", "BinaryData", "StringData", "Subsets", "Template"} {
		n, ok1 := structField(newObj, name)
		o, ok2 := structField(oldObj, name)
		if ok1 && ok2 && !equality.Semantic.DeepEqual(n.Interface(), o.Interface()) {
			return true
		}
	}
	return false
}

// hasStatus reports whether writes of the main endpoint leave status alone.
func hasStatus(r *scheme.Resource) bool { return r.HasSubresource("status") }

// prepareForCreate clears what clients may not set on create.
func prepareForCreate(r *scheme.Resource, obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Status = corev1.PodStatus{Phase: corev1.PodPending}
	case *corev1.Node:
		// The kubelet registers its node with capacity and conditions: keep them.
	case *corev1.Namespace:
		o.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	default:
		if hasStatus(r) {
			resetField(obj, "Status")
		}
	}
}

// fieldSet lists the fields a field selector can name for an object, as Kubernetes does.
func fieldSet(obj runtime.Object) fields.Set {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fields.Set{}
	}
	s := fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
	switch o := obj.(type) {
	case *corev1.Pod:
		s["spec.nodeName"] = o.Spec.NodeName
		s["spec.restartPolicy"] = string(o.Spec.RestartPolicy)
		s["spec.schedulerName"] = o.Spec.SchedulerName
		s["spec.serviceAccountName"] = o.Spec.ServiceAccountName
		s["status.phase"] = string(o.Status.Phase)
		s["status.podIP"] = o.Status.PodIP
		s["status.nominatedNodeName"] = o.Status.NominatedNodeName
	case *corev1.Event:
		s["involvedObject.kind"] = o.InvolvedObject.Kind
		s["involvedObject.namespace"] = o.InvolvedObject.Namespace
		s["involvedObject.name"] = o.InvolvedObject.Name
		s["involvedObject.uid"] = string(o.InvolvedObject.UID)
		s["involvedObject.apiVersion"] = o.InvolvedObject.APIVersion
		s["involvedObject.resourceVersion"] = o.InvolvedObject.ResourceVersion
		s["involvedObject.fieldPath"] = o.InvolvedObject.FieldPath
		s["reason"] = o.Reason
		s["reportingComponent"] = o.ReportingController
		s["source"] = o.Source.Component
		s["type"] = o.Type
	case *corev1.Node:
		s["spec.unschedulable"] = fmt.Sprint(o.Spec.Unschedulable)
	case *corev1.Namespace:
		s["status.phase"] = string(o.Status.Phase)
	case *corev1.Secret:
		s["type"] = string(o.Type)
	case *corev1.PersistentVolumeClaim:
		s["status.phase"] = string(o.Status.Phase)
	}
	return s
}

// checkFieldSelector rejects selectors on fields the resource does not index, as Kubernetes does.
func checkFieldSelector(r *scheme.Resource, sel fields.Selector) error {
	known := fieldSet(r.New())
	for _, req := range sel.Requirements() {
		if _, ok := known[req.Field]; !ok {
			return fmt.Errorf("field label not supported: %s", req.Field)
		}
	}
	return nil
}

// normalize folds write-only conveniences into the stored form, as Kubernetes does on decode:
// a Secret's stringData is merged into data (stringData wins) and never stored.
func normalize(obj runtime.Object) {
	if sec, ok := obj.(*corev1.Secret); ok && len(sec.StringData) > 0 {
		if sec.Data == nil {
			sec.Data = make(map[string][]byte, len(sec.StringData))
		}
		for k, v := range sec.StringData {
			sec.Data[k] = []byte(v)
		}
		sec.StringData = nil
	}
}
