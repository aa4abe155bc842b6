// Package fnsource packs the local files a Function's spec.sourcePath names into its
// spec.source before kubectl sends it: the API keeps a function's code in the object itself.
package fnsource
