// Package networktest is the contract every network.Network must meet, run against the fake in
// unit tests and against cninet with real namespaces in integration tests, plus the network
// namespace helpers those tests use.
package networktest
