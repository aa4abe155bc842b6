package build

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"minik8s.io/serverless/internal/imagestore"
	sv1 "minik8s.io/shared/apis/serverless/v1"
)

// Config tunes a Builder; only Images is required.
type Config struct {
	// Images is the engine images are built in (dockerstore on this host's Docker).
	Images imagestore.Store
	// Base is the runtime base image (DefaultBase when empty).
	Base string
	// Timeout bounds one build (10 minutes when zero).
	Timeout time.Duration
	// PipArgs are added to pip install, e.g. "--index-url", "http://mirror/simple".
	PipArgs []string
	// Cluster labels the images built (LabelCluster), and Remove leaves images labeled with
	// another cluster, so clusters sharing the engine never remove each other's (images with
	// no cluster label, built before there was one, are anyone's). Empty: no label, and Remove
	// takes the function's images whatever their cluster.
	Cluster string
}

// Builder builds and removes function images. New does no I/O.
type Builder struct {
	cfg Config
}

// New returns a Builder.
func New(cfg Config) *Builder {
	if cfg.Base == "" {
		cfg.Base = DefaultBase
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	return &Builder{cfg: cfg}
}

// Result is a finished build.
type Result struct {
	// Image is the reference built, minik8s-fn/<ns>.<name>:v<version>.
	Image string
	// ID is the image's id (sha256:...), empty when the build failed.
	ID string
	// Log is the tail of the build's output.
	Log string
}

// logTailLines is how much of a build's output Result.Log keeps.
const logTailLines = 40

// Build builds src's image and tags it Image(src.Namespace, src.Name, src.Version). progress,
// when not nil, gets each line of output as it comes ("Step 2/6 : RUN pip install ...", pip's
// lines). A failed build returns the Result with the log tail and an error saying why: a bad
// source, the base image missing, pip failing to install the requirements (with pip's error),
// or the build timing out. Nothing is tagged unless the build succeeded.
func (b *Builder) Build(ctx context.Context, src Source, progress func(line string)) (Result, error) {
	res := Result{Image: Image(src.Namespace, src.Name, src.Version)}
	src.Cluster = b.cfg.Cluster
	tarball, err := Context(b.cfg.Base, src, b.cfg.PipArgs)
	if err != nil {
		return res, fmt.Errorf("build %s: %w", res.Image, err)
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	var out logTail
	id, err := b.cfg.Images.Build(ctx, bytes.NewReader(tarball), res.Image, func(line string) {
		out.add(line)
		if progress != nil {
			progress(line)
		}
	})
	res.Log = out.tail()
	var failed *imagestore.BuildError
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("build %s: %w", res.Image, timeoutOr(ctx, b.cfg.Timeout, ctx.Err()))
	case errors.As(err, &failed):
		return res, fmt.Errorf("build %s: %s", res.Image, Explain(failed.Message, out.lines))
	case err != nil:
		return res, fmt.Errorf("build %s: %w", res.Image, err)
	}
	res.ID = id
	return res, nil
}

func timeoutOr(ctx context.Context, limit time.Duration, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s", limit)
	}
	return err
}

// logTail keeps the last lines of a build's output: Result.Log, and what Explain reads.
type logTail struct {
	lines []string
}

func (o *logTail) add(line string) {
	o.lines = append(o.lines, line)
	if len(o.lines) > 4*logTailLines {
		o.lines = append(o.lines[:0], o.lines[len(o.lines)-logTailLines:]...)
	}
}

func (o *logTail) tail() string {
	l := o.lines
	if len(l) > logTailLines {
		l = l[len(l)-logTailLines:]
	}
	return strings.Join(l, "\n")
}

// Remove deletes the images of a function's versions other than keep (0 removes them all),
// found by their labels. An image a running container uses stays (the store refuses) and is
// returned in inUse, to try again later; removed lists what went.
func (b *Builder) Remove(ctx context.Context, namespace, name string, keep int64) (removed, inUse []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	images, err := b.cfg.Images.List(ctx, map[string]string{LabelNamespace: namespace, sv1.LabelFunction: name})
	if err != nil {
		return nil, nil, fmt.Errorf("list images of function %s/%s: %w", namespace, name, err)
	}
	var errs []error
	for _, img := range images {
		if keep > 0 && img.Labels[sv1.LabelVersion] == strconv.FormatInt(keep, 10) {
			continue
		}
		if c := img.Labels[LabelCluster]; c != "" && b.cfg.Cluster != "" && c != b.cfg.Cluster {
			continue // another cluster's, on the same engine
		}
		ref := img.ID
		for _, t := range img.Tags {
			if strings.HasPrefix(t, Repository(namespace, name)+":") {
				ref = t
			}
		}
		// Every tag goes; an image a running container uses stays.
		switch err := b.cfg.Images.Remove(ctx, img.ID); {
		case err == nil || errors.Is(err, imagestore.ErrNotFound):
			removed = append(removed, ref)
		case errors.Is(err, imagestore.ErrInUse):
			inUse = append(inUse, ref)
		default:
			errs = append(errs, fmt.Errorf("remove image %s: %w", ref, err))
		}
	}
	return removed, inUse, errors.Join(errs...)
}
