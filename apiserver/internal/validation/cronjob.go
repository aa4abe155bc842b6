package validation

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CronJob is how CronJobs are validated, as Kubernetes does: the schedule parses as a
// standard cron line without a time zone of its own, the time zone is in the tz database, and
// the job template is a Job's spec whose selector is left to the Job's defaults.
// Nothing of a CronJob is immutable but what its metadata keeps.
var CronJob = Rules[*batchv1.CronJob]{Name: cronJobName, Spec: validateCronJob}

var concurrencyPolicies = []batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}

// The controller names a CronJob's Jobs <name>-<minutes since the epoch>, eleven characters
// more, and a Job's name must fit a 63-character label.
const cronJobNameMax = 63 - 11

func cronJobName(name string, prefix bool) []string {
	errs := dnsSubdomain(name, prefix)
	if len(name) > cronJobNameMax {
		errs = append(errs, fmt.Sprintf("must be no more than %d characters", cronJobNameMax))
	}
	return errs
}

func validateCronJob(cj *batchv1.CronJob) field.ErrorList {
	sp := field.NewPath("spec")
	spec := &cj.Spec
	var allErrs field.ErrorList
	if spec.Schedule == "" {
		allErrs = append(allErrs, field.Required(sp.Child("schedule"), ""))
	} else {
		allErrs = append(allErrs, validateSchedule(spec.Schedule, sp.Child("schedule"))...)
	}
	allErrs = append(allErrs, nonNegative(sp.Child("startingDeadlineSeconds"), spec.StartingDeadlineSeconds)...)
	allErrs = append(allErrs, validateTimeZone(spec.TimeZone, sp.Child("timeZone"))...)
	allErrs = append(allErrs, enum(sp.Child("concurrencyPolicy"), spec.ConcurrencyPolicy, concurrencyPolicies)...)
	allErrs = append(allErrs, validateJobTemplate(&spec.JobTemplate, sp.Child("jobTemplate"))...)
	allErrs = append(allErrs, nonNegative(sp.Child("successfulJobsHistoryLimit"), spec.SuccessfulJobsHistoryLimit)...)
	allErrs = append(allErrs, nonNegative(sp.Child("failedJobsHistoryLimit"), spec.FailedJobsHistoryLimit)...)
	return allErrs
}

// validateSchedule parses the schedule as the controller will (robfig/cron's standard parser:
// five fields or a descriptor such as @hourly or @every 5m). A time zone belongs in
// spec.timeZone, never in the schedule (CRON_TZ= or TZ=).
func validateSchedule(schedule string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if _, err := cron.ParseStandard(schedule); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath, schedule, err.Error()))
	}
	if strings.Contains(schedule, "TZ") {
		allErrs = append(allErrs, field.Invalid(fldPath, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return allErrs
}

// timeZonePart is what one slash-separated part of a tz database name may hold; checking it
// first keeps time.LoadLocation away from paths such as ../../etc/passwd.
var timeZonePart = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

func validateTimeZone(tz *string, fldPath *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(fldPath, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZonePart.MatchString(part) {
			return field.ErrorList{field.Invalid(fldPath, tz, fmt.Sprintf("unknown time zone %s", *tz))}
		}
	}
	var allErrs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		allErrs = append(allErrs, field.Invalid(fldPath, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath, tz, err.Error()))
	}
	return allErrs
}

// validateJobTemplate checks a CronJob's job template: each Job made from it gets its
// selector generated, so the template may not name one.
func validateJobTemplate(t *batchv1.JobTemplateSpec, fldPath *field.Path) field.ErrorList {
	sp := fldPath.Child("spec")
	allErrs := validateJobSpec(&t.Spec, sp)
	allErrs = append(allErrs, validatePodTemplate(&t.Spec.Template, sp.Child("template"), jobRestarts)...)
	if t.Spec.Selector != nil {
		allErrs = append(allErrs, field.Invalid(sp.Child("selector"), t.Spec.Selector, "`selector` will be auto-generated"))
	}
	if t.Spec.ManualSelector != nil && *t.Spec.ManualSelector {
		allErrs = append(allErrs, field.NotSupported(sp.Child("manualSelector"), t.Spec.ManualSelector, []string{"nil", "false"}))
	}
	return allErrs
}
