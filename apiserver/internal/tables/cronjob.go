package tables

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// CronJob is how kubectl get shows CronJobs.
var CronJob = NewPrinter(cronJobColumns, cronJobRow)

var (
	cronJobSpecDoc   = batchv1.CronJobSpec{}.SwaggerDoc()
	cronJobStatusDoc = batchv1.CronJobStatus{}.SwaggerDoc()
)

var cronJobColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Schedule", Type: "string", Description: cronJobSpecDoc["schedule"]},
	{Name: "Timezone", Type: "string", Description: cronJobSpecDoc["timeZone"]},
	{Name: "Suspend", Type: "boolean", Description: cronJobSpecDoc["suspend"]},
	{Name: "Active", Type: "integer", Description: cronJobStatusDoc["active"]},
	{Name: "Last Schedule", Type: "date", Description: cronJobStatusDoc["lastScheduleTime"]},
	ageColumn,
	containersColumn,
	imagesColumn,
	{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
}

func cronJobRow(cj *batchv1.CronJob, now time.Time) metav1.TableRow {
	tz := "<none>"
	if cj.Spec.TimeZone != nil {
		tz = *cj.Spec.TimeZone
	}
	suspend := "<unset>"
	if s := cj.Spec.Suspend; s != nil {
		suspend = "False"
		if *s {
			suspend = "True"
		}
	}
	last := "<none>"
	if t := cj.Status.LastScheduleTime; t != nil {
		last = duration.HumanDuration(now.Sub(t.Time))
	}
	names, images := containerCells(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		cj.Name, cj.Spec.Schedule, tz, suspend, int64(len(cj.Status.Active)), last, age(cj.CreationTimestamp, now),
		names, images, metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector),
	}}
}
