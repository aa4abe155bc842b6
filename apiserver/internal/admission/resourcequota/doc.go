// Package resourcequota decides a write against its namespace's ResourceQuotas as
// Kubernetes' ResourceQuota admission plugin does: which quotas limit the object, whether the
// usage it adds fits what each quota has left, and the raised status.used to record before the
// object is written. The decision is a pure function of the quotas and the write.
package resourcequota
