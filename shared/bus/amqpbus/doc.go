// Package amqpbus implements bus.Publisher and bus.Consumer on RabbitMQ
// (AMQP 0-9-1): a durable topic exchange, durable queues, publisher confirms,
// manual acks with prefetch, and reconnection with backoff and jitter.
package amqpbus
