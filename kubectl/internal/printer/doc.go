// Package printer renders server-side Tables and objects the way kubectl does: aligned
// columns with upper-case headers, and yaml, json or kind/name output.
package printer
