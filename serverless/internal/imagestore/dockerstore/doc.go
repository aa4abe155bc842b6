// Package dockerstore is imagestore.Store over the Docker Engine API: builds with the classic
// builder (its message stream decoded into lines and errors), images found by label filters,
// docker save and load for archives, Docker's not-found and conflict errors mapped to
// imagestore's.
package dockerstore
