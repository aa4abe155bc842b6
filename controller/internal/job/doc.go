// Package job runs batch/v1 Jobs as Kubernetes' Job controller does: pods up to parallelism
// until completions succeed (NonIndexed, or Indexed with a completion index per pod), failed
// pods counted against backoffLimit with an exponential back-off between re-creations,
// activeDeadlineSeconds, and the Job's status and conditions.
package job
