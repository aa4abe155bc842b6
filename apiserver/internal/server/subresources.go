package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// bind assigns a pod to a node (POST pods/<name>/binding), once.
func (s *Server) bind(c *gin.Context, t target) {
	data, err := readBody(c)
	if err != nil {
		writeError(c, err)
		return
	}
	var b corev1.Binding
	if err := decodeInto(c, data, &b, metav1.FieldValidationStrict); err != nil {
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
	pt := target{res: t.res, namespace: t.namespace, name: t.name}
	for attempt := 0; attempt < maxRetries; attempt++ {
		obj, kv, err := s.read(c.Request.Context(), pt)
		if err != nil {
			writeError(c, err)
			return
		}
		pod := obj.(*corev1.Pod)
		if b.UID != "" && b.UID != pod.UID {
			writeError(c, apierror.Conflict("", "pods", t.name, "the UID in the binding does not match the pod"))
			return
		}
		if pod.DeletionTimestamp != nil {
			writeError(c, apierror.Conflict("", "pods", t.name, "pod is being deleted, cannot be assigned to a host"))
			return
		}
		if pod.Spec.NodeName != "" {
			writeError(c, apierror.Conflict("", "pods", t.name, "pod "+t.name+" is already assigned to node \""+pod.Spec.NodeName+"\""))
			return
		}
		pod.Spec.NodeName = b.Target.Name
		setPodScheduled(pod, s.cfg.Now())
		_, _, err = s.commitUpdate(c.Request.Context(), target{res: t.res, namespace: t.namespace, name: t.name, subresource: "binding"}, obj.DeepCopyObject(), kv, pod, false, false)
		if errors.Is(err, errRetry) {
			continue
		}
		if err != nil {
			writeError(c, err)
			return
		}
		writeJSON(c, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
		return
	}
	writeError(c, apierror.Conflict("", "pods", t.name, "too many concurrent writes; try again"))
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

// scaleOf renders the autoscaling/v1 Scale of a Deployment or ReplicaSet.
func scaleOf(obj runtime.Object) (*autoscalingv1.Scale, error) {
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

func setReplicas(obj runtime.Object, n int32) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = &n
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = &n
	}
}

// scale serves GET, PUT and PATCH of the scale subresource.
func (s *Server) scale(c *gin.Context, t target, verb *string) {
	ctx := c.Request.Context()
	main := target{res: t.res, namespace: t.namespace, name: t.name}
	switch c.Request.Method {
	case http.MethodGet:
		*verb = "get"
		obj, _, err := s.read(ctx, main)
		if err == nil {
			var sc *autoscalingv1.Scale
			if sc, err = scaleOf(obj); err == nil {
				writeJSON(c, http.StatusOK, sc)
				return
			}
		}
		writeError(c, err)
	case http.MethodPut, http.MethodPatch:
		*verb = "update"
		var body []byte
		var err error
		if c.Request.Method == http.MethodPatch {
			*verb = "patch"
			body, err = readPatch(c)
		} else {
			body, err = readBody(c)
		}
		if err != nil {
			writeError(c, err)
			return
		}
		for attempt := 0; attempt < maxRetries; attempt++ {
			obj, kv, err := s.read(ctx, main)
			if err != nil {
				writeError(c, err)
				return
			}
			cur, err := scaleOf(obj)
			if err != nil {
				writeError(c, err)
				return
			}
			var want autoscalingv1.Scale
			if c.Request.Method == http.MethodPatch {
				curJSON, _ := json.Marshal(cur)
				pt := types.PatchType(mediaType(c.GetHeader("Content-Type")))
				scaleRes := &scheme.Resource{GVK: autoscalingv1.SchemeGroupVersion.WithKind("Scale"), New: func() runtime.Object { return &autoscalingv1.Scale{} }}
				patched, err := applyPatch(scaleRes, pt, curJSON, body)
				if err != nil {
					writeError(c, err)
					return
				}
				body = patched
			}
			if err := decodeInto(c, body, &want, metav1.FieldValidationStrict); err != nil {
				writeError(c, err)
				return
			}
			if want.Spec.Replicas < 0 {
				writeError(c, apierror.Invalid("autoscaling", "Scale", t.name, field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), want.Spec.Replicas, "must be greater than or equal to 0")}))
				return
			}
			conditional := want.ResourceVersion != "" && want.ResourceVersion != strconv.FormatInt(kv.ModRevision, 10)
			if conditional {
				writeError(c, conflictModified(main))
				return
			}
			next := obj.DeepCopyObject()
			setReplicas(next, want.Spec.Replicas)
			out, _, err := s.commitUpdate(ctx, main, obj, kv, next, false, false)
			if errors.Is(err, errRetry) {
				continue
			}
			if err != nil {
				writeError(c, err)
				return
			}
			sc, err := scaleOf(out)
			if err != nil {
				writeError(c, err)
				return
			}
			writeJSON(c, http.StatusOK, sc)
			return
		}
		writeError(c, conflictModified(main))
	default:
		s.methodNotAllowed(c, c.Request.Method, t)
	}
}
