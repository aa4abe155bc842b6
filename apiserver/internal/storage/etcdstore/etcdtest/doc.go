// Package etcdtest runs an embedded etcd for tests: in a temporary directory, on loopback ports
// picked free and picked again when another process takes one before etcd binds it, with a
// network client and an etcdstore.Store on it. Start is for a test; New is for a TestMain that
// shares one etcd between the tests of a package.
package etcdtest
