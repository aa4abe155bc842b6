// Package catalogtest makes clusters of a given size for tests and benchmarks.
package catalogtest
