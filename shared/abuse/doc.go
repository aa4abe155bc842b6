// Package abuse makes the inputs that prove a bad pod or a bad request hurts nobody else:
// malformed writes to the API (wrong types, truncated JSON, wrong content types, empty, large
// and oversized bodies, invalid names, on every verb that takes a body), sent the way simple
// clients send them with every answer counted; and pods whose containers cannot start or exit
// at once. The end-to-end tests that prove it and the benchmarks that measure it both use it.
package abuse
