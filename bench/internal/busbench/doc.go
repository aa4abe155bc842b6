// Package busbench holds microbenchmarks of publishing to RabbitMQ through
// amqpbus, the step of the event path the outbox spends its time in: a
// confirmed publish, unrouted or into a durable queue, one message or a batch
// per call.
package busbench
