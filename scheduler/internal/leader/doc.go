// Package leader elects one leader among several scheduler processes through a
// coordination.k8s.io/v1 Lease: the holder renews it, the others take it over once it has not
// been renewed for its duration as measured on their own clocks.
package leader
