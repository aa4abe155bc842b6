// Package suite measures the control plane against its own storage: API create
// latency and throughput against raw etcd puts, and the latency of change
// events through the outbox and RabbitMQ against a raw etcd watch, each pair in
// one run on one etcd so the ratio cancels out the machine.
package suite
