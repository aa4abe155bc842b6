// Package load burns CPU and holds memory on request, so autoscaler tests can drive a pod's
// usage up and down from outside.
package load
