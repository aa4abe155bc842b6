// Package mapper resolves what a user types for a resource type (pods, po, Deployment,
// deploy.apps, clusterrolebinding.rbac, horizontalpodautoscalers.v1.autoscaling) to a group,
// version and resource the server's discovery documents list, as kubectl's discovery REST
// mapper does: short names first, then plural and singular names, exact groups before group
// prefixes, and the core group and preferred versions before the rest. It also describes each
// listed resource (kind, scope, categories, subresources) for kinds kubectl has no Go type
// for, such as custom resources.
package mapper
