// Package resourcequota keeps ResourceQuotas' status as Kubernetes' resourcequota controller
// does: status.hard as the spec says, and status.used recounted from the objects of the
// quota's namespace, so that deleted and finished objects free what admission charged.
package resourcequota
