// Package amqptest helps integration tests reach the real RabbitMQ: finding it
// (or failing clearly), forcibly closing chosen connections through the
// management HTTP API, and cleaning up test exchanges and queues.
package amqptest
