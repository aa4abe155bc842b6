package authorizer

import "context"

type attributesKey struct{}

// WithAttributes records on a request's context who asked for what, once authorized: the
// registry's admission steps (NodeRestriction, RBAC's escalation checks) read it back.
func WithAttributes(ctx context.Context, a Attributes) context.Context {
	return context.WithValue(ctx, attributesKey{}, a)
}

// AttributesFrom returns what WithAttributes recorded; ok is false for the apiserver's own
// writes, which no user made.
func AttributesFrom(ctx context.Context) (Attributes, bool) {
	a, ok := ctx.Value(attributesKey{}).(Attributes)
	return a, ok
}
