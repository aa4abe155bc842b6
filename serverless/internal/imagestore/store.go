package imagestore

import (
	"context"
	"errors"
	"io"
)

// Store is an image engine: where function images are built, found by their labels, removed,
// and saved to be loaded on other nodes.
type Store interface {
	// Build builds the image a build context describes (a tar with a Dockerfile at its root;
	// its LABEL instructions label the image, which also keeps its base's labels) and tags it
	// ref, moving the tag from any image that had it. Each line of the build's output goes to
	// progress, when not nil, as it comes. A recipe that fails (a step's command, a file
	// missing from the context, the base missing) returns a *BuildError and tags nothing.
	Build(ctx context.Context, buildContext io.Reader, ref string, progress func(line string)) (id string, err error)
	// Inspect returns the image ref names (a tag or an id); ErrNotFound when there is none.
	Inspect(ctx context.Context, ref string) (Image, error)
	// List returns the images that carry every label of labels with its value, tagged or not.
	List(ctx context.Context, labels map[string]string) ([]Image, error)
	// Remove deletes the image with id and all its tags: ErrNotFound when there is none,
	// ErrInUse when a running container uses it (it stays).
	Remove(ctx context.Context, id string) error
	// Save streams an archive of the image tagged ref (docker save's format): Load, on a store
	// of the same kind, makes the same image again, id, tag and labels. ErrNotFound when
	// there is no such image.
	Save(ctx context.Context, ref string) (io.ReadCloser, error)
	// Load reads an archive Save wrote and returns the tags it put in place.
	Load(ctx context.Context, archive io.Reader) ([]string, error)
}

// Image is an image in a store.
type Image struct {
	// ID is the image's content address (sha256:...): a save and load keep it, so two
	// stores holding one ID hold the same image.
	ID string
	// Tags are the references that name it (repository:tag); none for an image whose tag moved
	// to a newer build.
	Tags   []string
	Labels map[string]string
}

var (
	// ErrNotFound: no image has that reference or id.
	ErrNotFound = errors.New("no such image")
	// ErrInUse: a running container uses the image, so it cannot be removed.
	ErrInUse = errors.New("image is in use by a running container")
)

// BuildError is a build whose recipe failed: Message is the builder's own error (such as
// "The command '/bin/sh -c pip install ...' returned a non-zero code: 1"); the output lines
// before it went to progress.
type BuildError struct {
	Message string
}

func (e *BuildError) Error() string { return e.Message }
