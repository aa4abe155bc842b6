// Package apierror holds the sentinel errors every component shares. The apiserver turns them
// into metav1.Status responses at its HTTP boundary; the client turns Status responses back into
// the same sentinels, so callers test with errors.Is wherever the error came from.
package apierror
