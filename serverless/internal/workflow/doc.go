// Package workflow runs Workflows: an interpreter of the state machine language (a pure
// function of the definition, the input, the functions it calls through an Invoker and a
// clock), the recording of each execution as a WorkflowExecution with its per-step trace,
// and the HTTP handler of POST /workflow/<namespace>/<name>.
package workflow
