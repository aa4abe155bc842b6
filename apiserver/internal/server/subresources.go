package server

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

var (
	bindingGVK  = corev1.SchemeGroupVersion.WithKind("Binding")
	scaleGVK    = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	evictionGVK = policyv1.SchemeGroupVersion.WithKind("Eviction")
)

// created is the Status subresources that act (binding, eviction) answer with.
func created(c *gin.Context) {
	writeJSON(c, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// readAction reads the options and body of a subresource that acts (binding, eviction): the
// body, of kind want, into into.
func readAction(c *gin.Context, t target, into runtime.Object, want schema.GroupVersionKind) (*metav1.CreateOptions, error) {
	opts, err := createOptions(c)
	if err != nil {
		return nil, err
	}
	data, err := readBody(c)
	if err != nil {
		return nil, err
	}
	return opts, decodeInto(c, t.res, data, into, want, metav1.FieldValidationStrict)
}

// bind assigns a pod to a node (POST pods/<name>/binding), once.
func (s *Server) bind(c *gin.Context, t target) {
	var b corev1.Binding
	opts, err := readAction(c, t, &b, bindingGVK)
	if err != nil {
		writeError(c, err)
		return
	}
	if b.Name != "" && b.Name != t.name {
		writeError(c, apierror.New(apierror.ErrBadRequest, "the name of the binding (%s) does not match the pod (%s)", b.Name, t.name))
		return
	}
	if b.Target.Name == "" {
		writeError(c, apierror.Invalid("", "Binding", t.name, field.ErrorList{field.Required(field.NewPath("target", "name"), "")}))
		return
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		writeError(c, apierror.Invalid("", "Binding", t.name, field.ErrorList{field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node"})}))
		return
	}
	_, err = s.reg.Update(c.Request.Context(), t.key(), registry.UpdateOptions{Subresource: "binding", DryRun: len(opts.DryRun) > 0},
		func(current runtime.Object, _ storage.KV) (runtime.Object, string, error) {
			pod := current.(*corev1.Pod)
			if b.UID != "" && b.UID != pod.UID {
				return nil, "", apierror.Conflict("", "pods", t.name, "the UID in the binding does not match the pod")
			}
			if pod.DeletionTimestamp != nil {
				return nil, "", apierror.Conflict("", "pods", t.name, "pod is being deleted, cannot be assigned to a host")
			}
			if pod.Spec.NodeName != "" {
				return nil, "", apierror.Conflict("", "pods", t.name, "pod "+t.name+" is already assigned to node \""+pod.Spec.NodeName+"\"")
			}
			pod.Spec.NodeName = b.Target.Name
			setPodScheduled(pod, s.cfg.Now())
			return pod, "", nil
		})
	if err != nil {
		writeError(c, err)
		return
	}
	created(c)
}

// setPodScheduled records the binding in the pod's PodScheduled condition.
func setPodScheduled(pod *corev1.Pod, now time.Time) {
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			pod.Status.Conditions[i] = cond
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond)
}

// evict deletes a pod through the Eviction API (POST pods/<name>/eviction), as kubectl drain
// does, unless the pod's PodDisruptionBudget has no disruption to spare (spendBudget).
func (s *Server) evict(c *gin.Context, t target) {
	var ev policyv1.Eviction
	opts, err := readAction(c, t, &ev, evictionGVK)
	if err != nil {
		writeError(c, err)
		return
	}
	if ev.Name != "" && ev.Name != t.name {
		writeError(c, apierror.New(apierror.ErrBadRequest, "name in URL does not match name in Eviction object"))
		return
	}
	del := ev.DeleteOptions
	if del == nil {
		del = &metav1.DeleteOptions{}
	}
	// A dry run asked for on the request applies to the deletion, as in Kubernetes; the two
	// may not disagree.
	if len(opts.DryRun) > 0 {
		if len(del.DryRun) > 0 && !slices.Equal(del.DryRun, opts.DryRun) {
			writeError(c, apierror.New(apierror.ErrBadRequest, "the dryRun of the request (%v) and of the Eviction's deleteOptions (%v) differ", opts.DryRun, del.DryRun))
			return
		}
		del.DryRun = opts.DryRun
	}
	obj, _, err := s.reg.Read(c.Request.Context(), t.key())
	if err != nil {
		writeError(c, err)
		return
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		writeError(c, apierror.New(apierror.ErrInternal, "stored pod is a %T", obj))
		return
	}
	if err := s.spendBudget(c.Request.Context(), pod, len(del.DryRun) > 0); err != nil {
		writeError(c, err)
		return
	}
	if _, err := s.reg.Delete(c.Request.Context(), t.key(), del); err != nil {
		writeError(c, err)
		return
	}
	created(c)
}

// scaleOf renders the autoscaling/v1 Scale of a Deployment, ReplicaSet or StatefulSet.
func scaleOf(reg *registry.Registry, res *scheme.Resource, obj runtime.Object) (*autoscalingv1.Scale, error) {
	var (
		om       metav1.ObjectMeta
		spec     int32
		status   int32
		selector *metav1.LabelSelector
	)
	switch o := obj.(type) {
	case *appsv1.Deployment:
		om, status, selector = o.ObjectMeta, o.Status.Replicas, o.Spec.Selector
		if o.Spec.Replicas != nil {
			spec = *o.Spec.Replicas
		}
	case *appsv1.ReplicaSet:
		om, status, selector = o.ObjectMeta, o.Status.Replicas, o.Spec.Selector
		if o.Spec.Replicas != nil {
			spec = *o.Spec.Replicas
		}
	case *appsv1.StatefulSet:
		om, status, selector = o.ObjectMeta, o.Status.Replicas, o.Spec.Selector
		if o.Spec.Replicas != nil {
			spec = *o.Spec.Replicas
		}
	case *corev1.ReplicationController:
		om, status, selector = o.ObjectMeta, o.Status.Replicas, metav1.SetAsLabelSelector(o.Spec.Selector)
		if o.Spec.Replicas != nil {
			spec = *o.Spec.Replicas
		}
	case *unstructured.Unstructured:
		return customScale(reg, res, o)
	default:
		return nil, apierror.New(apierror.ErrNotFound, "scale is not served for %T", obj)
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, apierror.New(apierror.ErrInternal, "bad stored selector: %v", err)
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: om.Name, Namespace: om.Namespace, UID: om.UID,
			ResourceVersion: om.ResourceVersion, CreationTimestamp: om.CreationTimestamp},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: sel.String()},
	}, nil
}

// customScale is the Scale of a custom object, read through its definition's scale paths.
func customScale(reg *registry.Registry, res *scheme.Resource, u *unstructured.Unstructured) (*autoscalingv1.Scale, error) {
	spec, status, selector, err := reg.Scale(res, u)
	if err != nil {
		return nil, err
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: selector},
	}, nil
}

func setReplicas(reg *registry.Registry, res *scheme.Resource, obj runtime.Object, n int32) error {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return reg.SetScale(res, o, n)
	case *appsv1.Deployment:
		o.Spec.Replicas = &n
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = &n
	case *appsv1.StatefulSet:
		o.Spec.Replicas = &n
	case *corev1.ReplicationController:
		o.Spec.Replicas = &n
	}
	return nil
}

// scaleResource describes the Scale kind for patching and negotiation.
var scaleResource = &scheme.Resource{GVK: scaleGVK, New: func() runtime.Object { return &autoscalingv1.Scale{} }}

// scale serves GET, PUT and PATCH of the scale subresource.
func (s *Server) scale(c *gin.Context, t target, verb *string) {
	ctx := c.Request.Context()
	main := target{res: t.res, namespace: t.namespace, name: t.name}
	switch c.Request.Method {
	case http.MethodGet:
		*verb = "get"
		out, ok := s.negotiate(c, scaleResource, answerObject)
		if !ok {
			return
		}
		obj, _, err := s.reg.Read(ctx, main.key())
		if err != nil {
			writeError(c, err)
			return
		}
		sc, err := scaleOf(s.reg, t.res, obj)
		if err != nil {
			writeError(c, err)
			return
		}
		s.respond(c, out, http.StatusOK, sc)
	case http.MethodPut, http.MethodPatch:
		*verb = "update"
		out, ok := s.negotiate(c, scaleResource, answerObject)
		if !ok {
			return
		}
		var body []byte
		var dry []string
		var err error
		pt := types.PatchType(mediaType(c.GetHeader("Content-Type")))
		if c.Request.Method == http.MethodPatch {
			*verb = "patch"
			if err := checkPatchType(scaleResource, pt); err != nil {
				writeError(c, err)
				return
			}
			var opts *metav1.PatchOptions
			if opts, err = patchOptions(c, pt); err == nil {
				dry = opts.DryRun
				body, err = readLimited(c)
			}
		} else {
			var opts *metav1.UpdateOptions
			if opts, err = updateOptions(c); err == nil {
				dry = opts.DryRun
				body, err = readBody(c)
			}
		}
		if err != nil {
			writeError(c, err)
			return
		}
		w, err := s.reg.Update(ctx, main.key(), registry.UpdateOptions{DryRun: len(dry) > 0}, func(current runtime.Object, kv storage.KV) (runtime.Object, string, error) {
			cur, err := scaleOf(s.reg, t.res, current)
			if err != nil {
				return nil, "", err
			}
			var want autoscalingv1.Scale
			if c.Request.Method == http.MethodPatch {
				curJSON, err := encodeJSON(cur)
				if err != nil {
					return nil, "", err
				}
				patched, err := applyPatch(scaleResource, pt, curJSON, body)
				if err != nil {
					return nil, "", err
				}
				if err := decodeStrict(c, patched, &want, metav1.FieldValidationStrict); err != nil {
					return nil, "", err
				}
			} else if err := decodeInto(c, scaleResource, body, &want, scaleGVK, metav1.FieldValidationStrict); err != nil {
				return nil, "", err
			}
			if want.Spec.Replicas < 0 {
				return nil, "", apierror.Invalid("autoscaling", "Scale", t.name, field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), want.Spec.Replicas, "must be greater than or equal to 0")})
			}
			if want.ResourceVersion != "" && want.ResourceVersion != strconv.FormatInt(kv.ModRevision, 10) {
				return nil, "", registry.ConflictModified(main.key())
			}
			if err := setReplicas(s.reg, t.res, current, want.Spec.Replicas); err != nil {
				return nil, "", err
			}
			return current, "", nil
		})
		if err != nil {
			writeError(c, err)
			return
		}
		sc, err := scaleOf(s.reg, t.res, w.Object)
		if err != nil {
			writeError(c, err)
			return
		}
		s.respond(c, out, http.StatusOK, sc)
	default:
		s.methodNotAllowed(c, c.Request.Method, t)
	}
}
