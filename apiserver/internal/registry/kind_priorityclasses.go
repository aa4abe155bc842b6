package registry

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"

	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// PriorityClasses name the priorities pods ask for by priorityClassName; the scheduler takes
// pods of higher priority first. Only one may be the global default.
var _ = register(Kind[*schedulingv1.PriorityClass]{
	Resource:   served("priorityclasses"),
	Default:    defaultPriorityClass,
	Admit:      admitPriorityClass,
	Validation: validation.PriorityClass,
	Table:      tables.PriorityClass,
	CheckDelete: func(name string) error {
		if _, system := validation.SystemPriorityClasses[name]; system {
			return apierror.Forbidden(schedulingv1.GroupName, "priorityclasses", name, fmt.Sprintf("the %v system priority class cannot be deleted", name))
		}
		return nil
	},
})

func defaultPriorityClass(pc *schedulingv1.PriorityClass) {
	if pc.PreemptionPolicy == nil {
		p := corev1.PreemptLowerPriority
		pc.PreemptionPolicy = &p
	}
}

// SystemPriorityClasses are the classes the apiserver keeps in every cluster.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	var out []*schedulingv1.PriorityClass
	for _, name := range []string{validation.SystemClusterCritical, validation.SystemNodeCritical} {
		pc := &schedulingv1.PriorityClass{Value: validation.SystemPriorityClasses[name],
			Description: "Used for system critical pods that must not be moved from their current node."}
		if name == validation.SystemClusterCritical {
			pc.Description = "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."
		}
		pc.Name = name
		defaultPriorityClass(pc)
		out = append(out, pc)
	}
	return out
}

// admitPriorityClass refuses a second global default, as Kubernetes' Priority admission does
// on create.
func admitPriorityClass(ctx context.Context, r *Registry, pc *schedulingv1.PriorityClass) error {
	if !pc.GlobalDefault {
		return nil
	}
	def, err := r.defaultPriorityClass(ctx)
	if err != nil {
		return err
	}
	if def != nil {
		return apierror.Forbidden(schedulingv1.GroupName, "priorityclasses", pc.Name,
			fmt.Sprintf("PriorityClass %v is already marked as default. Only one default can exist", def.Name))
	}
	return nil
}

// admitPodPriority resolves a new pod's priorityClassName (or the global default class) into
// its priority and preemption policy, as Kubernetes' Priority admission does. A class that
// does not exist, or a priority the pod states that differs from its class's, is refused.
func admitPodPriority(ctx context.Context, r *Registry, pod *corev1.Pod) error {
	var (
		priority int32
		policy   = corev1.PreemptLowerPriority
	)
	name := pod.Spec.PriorityClassName
	if name == "" {
		def, err := r.defaultPriorityClass(ctx)
		if err != nil {
			return err
		}
		if def != nil {
			pod.Spec.PriorityClassName, priority = def.Name, def.Value
			if def.PreemptionPolicy != nil {
				policy = *def.PreemptionPolicy
			}
		}
	} else {
		res, err := scheme.Lookup("priorityclasses")
		if err != nil {
			return err
		}
		obj, _, err := r.Read(ctx, Key{Resource: res, Name: name})
		if errors.Is(err, apierror.ErrNotFound) {
			return apierror.Forbidden("", "pods", pod.Name, fmt.Sprintf("no PriorityClass with name %v was found", name))
		}
		if err != nil {
			return err
		}
		pc := obj.(*schedulingv1.PriorityClass)
		priority = pc.Value
		if pc.PreemptionPolicy != nil {
			policy = *pc.PreemptionPolicy
		}
	}
	// An unset priority was defaulted to 0 before admission.
	if p := pod.Spec.Priority; p != nil && *p != 0 && *p != priority {
		return apierror.Forbidden("", "pods", pod.Name, fmt.Sprintf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *p, priority))
	}
	if p := pod.Spec.PreemptionPolicy; p != nil && *p != policy {
		return apierror.Forbidden("", "pods", pod.Name, fmt.Sprintf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *p, policy))
	}
	pod.Spec.Priority, pod.Spec.PreemptionPolicy = &priority, &policy
	return nil
}

// defaultPriorityClass is the global default class with the lowest value, or nil.
func (r *Registry) defaultPriorityClass(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	res, err := scheme.Lookup("priorityclasses")
	if err != nil {
		return nil, err
	}
	list, err := r.List(ctx, Key{Resource: res}, ListOptions{})
	if err != nil {
		return nil, err
	}
	var def *schedulingv1.PriorityClass
	for _, obj := range list.Items {
		pc := obj.(*schedulingv1.PriorityClass)
		if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def, nil
}
