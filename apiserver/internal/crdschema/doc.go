// Package crdschema is the schema half of CustomResourceDefinitions: it
// defaults and validates CRDs, and for one served version of a CRD it prunes,
// defaults and validates custom objects, reads and writes the scale
// subresource, renders printer columns and lists selectable fields. It wraps
// k8s.io/apiextensions-apiserver so that custom objects behave exactly as they
// do against kube-apiserver (same structural-schema rules, same field paths
// and messages); the registry and HTTP serving of custom resources live
// elsewhere.
package crdschema
