package registry

import (
	batchv1 "k8s.io/api/batch/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// CronJobs make Jobs on a schedule; the cronjob controller keeps their status.
var _ = register(Kind[*batchv1.CronJob]{
	Resource:   served("cronjobs"),
	Default:    defaults.CronJob,
	Validation: validation.CronJob,
	Table:      tables.CronJob,
})
