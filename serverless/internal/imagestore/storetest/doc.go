// Package storetest is the contract every imagestore.Store keeps: one suite, run against the
// in-memory fake in unit tests and against Docker in integration tests, building small images
// on a base already present (the fake's own, or minik8s/pause on a Docker host) and removing
// them when each case ends.
package storetest
