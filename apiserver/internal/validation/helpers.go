package validation

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// enum reports an empty value as Required and one outside valid as NotSupported, as
// Kubernetes does for defaulted enums.
func enum[T ~string](fldPath *field.Path, v T, valid []T) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if !contains(valid, v) {
		return field.ErrorList{field.NotSupported(fldPath, v, valid)}
	}
	return nil
}

func contains[T comparable](list []T, v T) bool {
	return slices.Contains(list, v)
}

func quoteJoin[T ~string](list []T) string {
	q := make([]string, len(list))
	for i, v := range list {
		q[i] = `"` + string(v) + `"`
	}
	return strings.Join(q, ", ")
}

// nameErrs turns the messages of an apimachinery format check into Invalid errors.
func nameErrs(fldPath *field.Path, v string, check func(string) []string) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range check(v) {
		allErrs = append(allErrs, field.Invalid(fldPath, v, msg))
	}
	return allErrs
}

func portNum(fldPath *field.Path, port int32) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(port)) {
		allErrs = append(allErrs, field.Invalid(fldPath, port, msg))
	}
	return allErrs
}

func nonNegative[T int32 | int64](fldPath *field.Path, v *T) field.ErrorList {
	if v == nil || *v >= 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, *v, "must be greater than or equal to 0")}
}

func positive[T int32 | int64](fldPath *field.Path, v *T) field.ErrorList {
	if v == nil || *v > 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, *v, "must be greater than 0")}
}

// sortedKeys gives map keys in a fixed order so error lists are stable.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
