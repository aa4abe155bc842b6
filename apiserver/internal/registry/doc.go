// Package registry turns the API's verbs into storage operations for every served resource.
// The verbs (create, update, delete, get, list, watch) are generic; what is special about a
// kind (what a client may not set, defaults, validation, address allocation, graceful
// deletion, field selectors, its table) is said once, by the kind's Kind in its kind_*.go
// file, which the verbs see as a Strategy.
//
// # Adding a kind
//
// A new kind is one file here, kind_<plural>.go, whose one registration line is
//
//	var _ = register(Kind[*v1.Widget]{Resource: served("widgets"), ...})
//
// with the discovery facts (group, version, names, scope, subresources, New and NewList) in
// the resource's entry in shared/scheme's Resources, which components besides the apiserver
// read too. The hooks, each optional:
//
//   - PrepareForCreate sets what the server decides on a new object; by default the status is
//     cleared where a status subresource owns it (and an update keeps the stored one).
//   - Canonicalize folds write-only fields into the stored form (a Secret's stringData).
//   - Default fills defaults on create and update; KeepOnUpdate first carries into an update
//     what the server set before (a Service's cluster IPs).
//   - Validation is the kind's validation.Rules: its name rule, the checks of its spec, and
//     what may not change on update.
//   - Fields are the fields a field selector may name besides metadata.name and namespace.
//   - Table is the kind's tables.Printer, the columns of kubectl get.
//   - Allocates, CheckDelete, GracePeriod, GCPolicy, Finalizing and MarkDeleting say how
//     objects hold addresses and go away, for the few kinds that differ.
//
// Defaults, validation and columns of any size live in the defaults, validation and tables
// packages, one exported name per kind (defaults.Pod, validation.Pod, tables.Pod) that the
// kind's file names; a small kind may write its hooks in its own file instead, as the example
// kind in example_kind_test.go does.
package registry
