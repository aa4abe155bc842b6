// Package atomicdir projects a set of files into a directory so that a reader sees either the
// whole old set or the whole new one, never a mix: the files live in a hidden timestamped
// directory, a `..data` symlink names the current one and is replaced with a rename, and the
// user-visible names are symlinks through `..data`. It is the layout Kubernetes gives
// configMap, secret, downwardAPI and projected volumes, which programs watching `..data` with
// inotify rely on.
package atomicdir
