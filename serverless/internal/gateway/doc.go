// Package gateway is the functions' HTTP trigger: POST /function/<ns>/<name> forwards the
// JSON body to a ready pod of the function, chosen by least calls in flight, within the
// function's per-pod limit and queue; it holds calls while a function scales from zero, and
// counts every call for the autoscaler.
package gateway
