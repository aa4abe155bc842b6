package validation

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

var runtimes = []string{"python3"}

// maxFunctionSource bounds a Function's code, which is stored inline in etcd.
const maxFunctionSource = 1 << 20

// Function is how Functions are validated; their names are DNS labels.
var Function = Rules[*serverlessv1.Function]{Name: dnsLabel, Spec: validateFunction}

func validateFunction(f *serverlessv1.Function) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &f.Spec
	var allErrs field.ErrorList
	if spec.Runtime != "" && !contains(runtimes, spec.Runtime) {
		allErrs = append(allErrs, field.NotSupported(sp.Child("runtime"), spec.Runtime, runtimes))
	}
	srcPath := sp.Child("source")
	if spec.SourcePath != "" {
		allErrs = append(allErrs, field.Forbidden(sp.Child("sourcePath"), "local files are packed into spec.source by minik8s's kubectl (bin/kubectl apply -f); other clients send spec.source inline"))
	} else if len(spec.Source) == 0 {
		allErrs = append(allErrs, field.Required(srcPath, "must contain the handler's module"))
	}
	size := len(spec.Requirements)
	for _, name := range sortedKeys(spec.Source) {
		size += len(name) + len(spec.Source[name])
		if msg := sourceFileName(name); msg != "" {
			allErrs = append(allErrs, field.Invalid(srcPath.Key(name), name, msg))
		}
	}
	if size > maxFunctionSource {
		allErrs = append(allErrs, field.TooLong(srcPath, "", maxFunctionSource))
	}
	hp := sp.Child("handler")
	module, _, ok := splitHandler(spec.Handler)
	switch {
	case spec.Handler == "":
		allErrs = append(allErrs, field.Required(hp, `must be "module.function", e.g. "main.handle"`))
	case !ok:
		allErrs = append(allErrs, field.Invalid(hp, spec.Handler, `must be "module.function" where both are Python identifiers, e.g. "main.handle"`))
	case len(spec.Source) > 0:
		file := strings.ReplaceAll(module, ".", "/") + ".py"
		pkg := strings.ReplaceAll(module, ".", "/") + "/__init__.py"
		_, hasFile := spec.Source[file]
		_, hasPkg := spec.Source[pkg]
		if !hasFile && !hasPkg {
			allErrs = append(allErrs, field.Invalid(hp, spec.Handler, fmt.Sprintf("module %q has no file %q in spec.source", module, file)))
		}
	}
	allErrs = append(allErrs, validateFunctionScale(&spec.Scale, sp.Child("scale"))...)
	if t := spec.TimeoutSeconds; t != nil && (*t <= 0 || *t > maxFunctionTimeout) {
		allErrs = append(allErrs, field.Invalid(sp.Child("timeoutSeconds"), *t, fmt.Sprintf("must be between 1 and %d", maxFunctionTimeout)))
	}
	allErrs = append(allErrs, validateResources(&spec.Resources, sp.Child("resources"))...)
	for i, e := range spec.Env {
		if e.Name == "" {
			allErrs = append(allErrs, field.Required(sp.Child("env").Index(i).Child("name"), ""))
		}
		if e.ValueFrom != nil {
			allErrs = append(allErrs, field.Forbidden(sp.Child("env").Index(i).Child("valueFrom"), "functions take literal values only"))
		}
	}
	names := sets.New[string]()
	for i, sc := range spec.Schedules {
		p := sp.Child("schedules").Index(i)
		allErrs = append(allErrs, nameErrs(p.Child("name"), sc.Name, validation.IsDNS1123Label)...)
		if names.Has(sc.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), sc.Name))
		}
		names.Insert(sc.Name)
		if sc.Schedule == "" {
			allErrs = append(allErrs, field.Required(p.Child("schedule"), `a cron expression such as "*/5 * * * *" or "@every 30s"`))
		} else if _, err := cronParser.Parse(sc.Schedule); err != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("schedule"), sc.Schedule, err.Error()))
		}
		if sc.Input != "" && !json.Valid([]byte(sc.Input)) {
			allErrs = append(allErrs, field.Invalid(p.Child("input"), sc.Input, "must be JSON"))
		}
	}
	return allErrs
}

// maxFunctionTimeout bounds one call of a function (15 minutes, as AWS Lambda).
const maxFunctionTimeout = 900

// cronParser reads schedules as the serverless component does: five fields or a descriptor.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// splitHandler splits "pkg.module.func" into the module path and the function name.
func splitHandler(h string) (module, fn string, ok bool) {
	i := strings.LastIndex(h, ".")
	if i <= 0 {
		return "", "", false
	}
	module, fn = h[:i], h[i+1:]
	for _, part := range strings.Split(module, ".") {
		if !pythonIdentifier(part) {
			return "", "", false
		}
	}
	return module, fn, pythonIdentifier(fn)
}

func pythonIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// sourceFileName explains what is wrong with a source file name, or returns "".
// Names become paths inside the function image, so they must stay inside its directory.
func sourceFileName(name string) string {
	switch {
	case name == "":
		return "file name must not be empty"
	case strings.HasPrefix(name, "/"):
		return "must be a relative path"
	case path.Clean(name) != name || name == "." || strings.HasPrefix(name, "../") || name == "..":
		return "must be a clean relative path without '..'"
	case strings.ContainsAny(name, "\\\x00"):
		return "must not contain backslashes or NUL"
	}
	return ""
}

func validateFunctionScale(s *serverlessv1.FunctionScale, fldPath *field.Path) field.ErrorList {
	allErrs := nonNegative(fldPath.Child("minReplicas"), s.MinReplicas)
	allErrs = append(allErrs, positive(fldPath.Child("maxReplicas"), s.MaxReplicas)...)
	if s.MinReplicas != nil && s.MaxReplicas != nil && *s.MaxReplicas < *s.MinReplicas {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxReplicas"), *s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	allErrs = append(allErrs, positive(fldPath.Child("targetConcurrency"), s.TargetConcurrency)...)
	allErrs = append(allErrs, positive(fldPath.Child("targetRequestsPerSecond"), s.TargetRequestsPerSecond)...)
	allErrs = append(allErrs, nonNegative(fldPath.Child("containerConcurrency"), s.ContainerConcurrency)...)
	allErrs = append(allErrs, nonNegative(fldPath.Child("maxQueue"), s.MaxQueue)...)
	if w := s.StableWindowSeconds; w != nil && (*w < 6 || *w > 3600) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("stableWindowSeconds"), *w, "must be between 6 and 3600"))
	}
	allErrs = append(allErrs, nonNegative(fldPath.Child("idleSeconds"), s.IdleSeconds)...)
	return allErrs
}
