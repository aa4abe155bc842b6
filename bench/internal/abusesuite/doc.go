// Package abusesuite measures, on make up's cluster, that a bad pod or a bad request hurts
// nobody else. The storm: the node agents' CPU and the start of good pods while 40 pods fail
// (a command missing from the image, a container that exits at once), against the same
// measurements on the quiet node. Bad requests: a few thousand malformed writes on fresh and
// kept-alive connections, every answer counted, timed against as many well-formed reads.
package abusesuite
