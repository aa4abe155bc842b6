// Package podcache is where the kubelet keeps the pods it is meant to run, so that after a
// restart it can rebuild its desired state even while the apiserver is unreachable.
// rediscache implements Cache on Redis; fake implements it in memory; podcachetest is the
// contract both pass.
package podcache
