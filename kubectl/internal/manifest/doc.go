// Package manifest reads the objects of -f arguments: files, directories (optionally
// recursive) and stdin, each holding multi-document YAML or JSON, with kind: List expanded.
package manifest
