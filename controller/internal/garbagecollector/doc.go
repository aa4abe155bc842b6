// Package garbagecollector deletes objects whose owners are gone, as Kubernetes' garbage
// collector does: background deletion of dependents, foreground deletion (an owner waits for
// its blocking dependents) and orphaning (dependents lose their owner reference), over the
// metadata of every kind.
package garbagecollector
