// Package bustest is the contract test suite for bus implementations: Run
// checks routing, acknowledgement and redelivery, durability, reconnection and
// ordering against any bus built by a factory, so the in-memory bus used in
// unit tests and the RabbitMQ adapter are held to the same behaviour.
package bustest
