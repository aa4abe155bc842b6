// Package quota says what ResourceQuotas count: the usage an object charges, which quotas and
// scopes it falls under, and the arithmetic of resource lists. The apiserver's admission
// charges a write's usage against its namespace's quotas; the controller-manager recomputes
// each quota's usage from the objects.
package quota
