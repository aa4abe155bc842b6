// Package run runs a component's long-lived parts together: the first real failure stops the
// others, shutdown happens in reverse order of Add so servers stop before the queues and
// clients they use, and a part that will not stop cannot hang the process forever.
package run
