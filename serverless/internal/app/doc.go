// Package app wires the serverless component: the informers fed by its bus queue, the
// function controller, the gateway with its autoscaler, and the workflow engine, in one run
// group.
package app
