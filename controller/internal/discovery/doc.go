// Package discovery resolves kinds the static scheme does not know, those of
// CustomResourceDefinitions, through the apiserver's discovery documents, with a short-lived
// cache that is asked again on a miss: for the garbage collector's owners and the
// HorizontalPodAutoscaler's scale targets.
package discovery
