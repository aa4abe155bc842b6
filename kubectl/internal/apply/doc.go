// Package apply decides what kubectl apply does with one object: create it with the
// last-applied annotation, patch it with a three-way patch, or leave it unchanged. The decision
// is a pure function of the desired and live objects, so it is tested without a server.
package apply
