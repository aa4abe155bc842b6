// Package policy shapes RBAC rules for the command line, as kubectl does: it builds the rules
// of `create role` and `create clusterrole` from their flags, and breaks rules down, compacts
// and orders them for the table `auth can-i --list` prints.
package policy
