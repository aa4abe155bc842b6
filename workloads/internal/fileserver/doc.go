// Package fileserver reads and writes files under one directory over HTTP, so tests can put a
// file into a volume through one container and read it back through another.
package fileserver
