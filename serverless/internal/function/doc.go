// Package function is the Function controller: it builds an image per function version,
// puts it on the nodes, runs the function as a Deployment it owns, reports build progress and
// pods in the Function's status and events, removes images nobody runs any more, and calls
// functions on their cron schedules.
package function
