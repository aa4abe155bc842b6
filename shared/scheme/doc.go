// Package scheme registers every kind minik8s serves and describes each served resource
// (plural name, scope, short names, verbs, subresources), so the apiserver, its clients and
// kubectl share one table.
package scheme
