// Package imagetest checks the images that scripts/images.sh builds by running each one in the
// real Docker engine. It holds tests only; they need Docker and are skipped under -short.
package imagetest
