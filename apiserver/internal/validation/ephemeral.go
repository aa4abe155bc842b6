package validation

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ephemeralFields are the container fields an ephemeral container may set; the others
// (ports, probes, lifecycle, resources, restartPolicy, ...) would have the pod rely on a
// container that is only there to debug it.
var ephemeralFields = sets.New(
	"Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env", "VolumeMounts",
	"TerminationMessagePath", "TerminationMessagePolicy", "ImagePullPolicy", "SecurityContext",
	"Stdin", "StdinOnce", "TTY",
)

// validateEphemeralContainers checks the ephemeral containers of a pod spec as Kubernetes
// does: each a valid container whose name no other container of the pod has, that sets only
// the fields ephemeral containers may, and whose target is one of the pod's other containers.
func validateEphemeralContainers(s *corev1.PodSpec, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(s.EphemeralContainers) == 0 {
		return nil
	}
	others := sets.New[string]()
	for _, c := range s.InitContainers {
		others.Insert(c.Name)
	}
	for _, c := range s.Containers {
		others.Insert(c.Name)
	}
	names := others.Clone()
	for i := range s.EphemeralContainers {
		ec := &s.EphemeralContainers[i]
		idxPath := fldPath.Index(i)
		c := corev1.Container(ec.EphemeralContainerCommon)
		// Names are checked across all the pod's containers below.
		allErrs = append(allErrs, validateContainer(&c, idxPath, sets.New[string](), volumes, false)...)
		if names.Has(ec.Name) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), ec.Name))
		}
		names.Insert(ec.Name)
		if ec.TargetContainerName != "" && !others.Has(ec.TargetContainerName) {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("targetContainerName"), ec.TargetContainerName))
		}
		allErrs = append(allErrs, onlyAllowedFields(reflect.ValueOf(ec.EphemeralContainerCommon), ephemeralFields, "cannot be set for an Ephemeral Container", idxPath)...)
		for j, vm := range ec.VolumeMounts {
			if vm.SubPath != "" {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
			if vm.SubPathExpr != "" {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("volumeMounts").Index(j).Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	return allErrs
}

// onlyAllowedFields reports each field of the struct v that is set but not in allowed, by
// its JSON name under fldPath.
func onlyAllowedFields(v reflect.Value, allowed sets.Set[string], msg string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if allowed.Has(f.Name) || v.Field(i).IsZero() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), msg))
	}
	return allErrs
}

// validateEphemeralContainersUpdate refuses the removal or change of an ephemeral container a
// pod already has: they may only be added. The order may change, as patches do not keep it.
func validateEphemeralContainersUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	var allErrs field.ErrorList
	specPath := field.NewPath("spec", "ephemeralContainers")
	byName := make(map[string]*corev1.EphemeralContainer, len(newPod.Spec.EphemeralContainers))
	for i := range newPod.Spec.EphemeralContainers {
		byName[newPod.Spec.EphemeralContainers[i].Name] = &newPod.Spec.EphemeralContainers[i]
	}
	for _, old := range oldPod.Spec.EphemeralContainers {
		next, ok := byName[old.Name]
		switch {
		case !ok:
			allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", old.Name)))
		case !equality.Semantic.DeepEqual(old, *next):
			allErrs = append(allErrs, field.Forbidden(specPath.Key(old.Name), fmt.Sprintf("existing ephemeral containers %q may not be changed\n", old.Name)))
		}
	}
	return allErrs
}
