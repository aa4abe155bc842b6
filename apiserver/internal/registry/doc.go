// Package registry turns the API's verbs into storage operations for every served resource.
// The verbs (create, update, delete, get, list, watch) are generic; what is special about a
// kind (what a client may not set, defaults, validation, address allocation, graceful
// deletion, field selectors) is said once, by the kind's Strategy.
package registry
