// Package fake is an in-memory podcache.Cache for unit tests of the kubelet.
package fake
