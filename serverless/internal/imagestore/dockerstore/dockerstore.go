package dockerstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"minik8s.io/serverless/internal/imagestore"
)

// Store is imagestore.Store over a Docker engine.
type Store struct {
	cli client.ImageAPIClient
}

var _ imagestore.Store = (*Store)(nil)

// New returns a Store over cli (a *client.Client); it does no I/O.
func New(cli client.ImageAPIClient) *Store { return &Store{cli: cli} }

// Build uses the classic builder, which every engine has, never pulls a newer base (the base
// is built on this host), and removes the intermediate containers even of a failed build.
func (s *Store) Build(ctx context.Context, buildContext io.Reader, ref string, progress func(string)) (string, error) {
	resp, err := s.cli.ImageBuild(ctx, buildContext, types.ImageBuildOptions{
		Tags:        []string{ref},
		Remove:      true,
		ForceRemove: true,
		PullParent:  false,
		Version:     types.BuilderV1,
	})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	out := readBuild(resp.Body, progress)
	switch {
	case out.err != "":
		return "", &imagestore.BuildError{Message: out.err}
	case out.readErr != nil:
		return "", fmt.Errorf("reading docker's answer: %w", out.readErr)
	case out.id != "":
		return out.id, nil
	}
	// Engines that send no aux message still tagged the image.
	img, err := s.Inspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("the image built: %w", err)
	}
	return img.ID, nil
}

func (s *Store) Inspect(ctx context.Context, ref string) (imagestore.Image, error) {
	img, _, err := s.cli.ImageInspectWithRaw(ctx, ref)
	if err != nil {
		return imagestore.Image{}, mapErr(ref, err)
	}
	var labels map[string]string
	if img.Config != nil {
		labels = img.Config.Labels
	}
	return newImage(img.ID, img.RepoTags, labels), nil
}

func (s *Store) List(ctx context.Context, labels map[string]string) ([]imagestore.Image, error) {
	f := filters.NewArgs()
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	list, err := s.cli.ImageList(ctx, image.ListOptions{Filters: f})
	if err != nil {
		return nil, err
	}
	out := make([]imagestore.Image, 0, len(list))
	for _, img := range list {
		out = append(out, newImage(img.ID, img.RepoTags, img.Labels))
	}
	return out, nil
}

// Remove forces, so an image with several tags goes with all of them; Docker still refuses an
// image a running container uses.
func (s *Store) Remove(ctx context.Context, id string) error {
	_, err := s.cli.ImageRemove(ctx, id, image.RemoveOptions{Force: true, PruneChildren: true})
	return mapErr(id, err)
}

func (s *Store) Save(ctx context.Context, ref string) (io.ReadCloser, error) {
	rc, err := s.cli.ImageSave(ctx, []string{ref})
	if err != nil {
		return nil, mapErr(ref, err)
	}
	return rc, nil
}

// Load reads the engine's message stream to its end: it reports a bad archive there, after
// answering 200.
func (s *Store) Load(ctx context.Context, archive io.Reader) ([]string, error) {
	resp, err := s.cli.ImageLoad(ctx, archive, true)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var loaded []string
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return loaded, nil
			}
			return loaded, fmt.Errorf("reading docker's answer: %w", err)
		}
		if msg.Error != "" {
			return loaded, errors.New(msg.Error)
		}
		for _, line := range strings.Split(msg.Stream, "\n") {
			if ref, ok := strings.CutPrefix(strings.TrimSpace(line), "Loaded image: "); ok {
				loaded = append(loaded, ref)
			}
		}
	}
}

// newImage leaves out the "<none>:<none>" older engines list for an untagged image.
func newImage(id string, tags []string, labels map[string]string) imagestore.Image {
	img := imagestore.Image{ID: id, Labels: maps.Clone(labels)}
	for _, t := range tags {
		if t != "<none>:<none>" {
			img.Tags = append(img.Tags, t)
		}
	}
	return img
}

// mapErr turns Docker's not-found and conflict errors into imagestore's, keeping its message.
func mapErr(ref string, err error) error {
	switch {
	case err == nil:
		return nil
	case errdefs.IsNotFound(err):
		return fmt.Errorf("%w: %s", imagestore.ErrNotFound, ref)
	case errdefs.IsConflict(err):
		return fmt.Errorf("%w: %v", imagestore.ErrInUse, err)
	}
	return err
}
