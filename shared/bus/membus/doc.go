// Package membus is an in-memory bus.Publisher and bus.Consumer with RabbitMQ's
// topic semantics (durable named queues, "*" and "#" bindings, redelivery in
// order after a handler error, OnConnect on every reconnect), for unit tests of
// components that consume or publish changes.
package membus
