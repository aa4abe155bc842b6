// Package app wires the serverless component on the component manager: the caches fed by its
// bus queue, the function controller, the gateway with its autoscaler and call counters, and
// the workflow engine.
package app
