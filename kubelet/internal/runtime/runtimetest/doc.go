// Package runtimetest is the contract every runtime.Runtime keeps: one suite, run against the
// in-memory fake in unit tests and against Docker in integration tests, driving containers
// whose main process is the helper script interpreter (see package helper).
package runtimetest
