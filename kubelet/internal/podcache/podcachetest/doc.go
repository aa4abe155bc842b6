// Package podcachetest is the contract every podcache.Cache meets, run against the fake in
// unit tests and against Redis in integration tests.
package podcachetest
