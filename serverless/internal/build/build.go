package build

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	sv1 "minik8s.io/shared/apis/serverless/v1"
)

// Engine is the part of the Docker API builds use; *client.Client is one.
type Engine interface {
	ImageBuild(ctx context.Context, buildContext io.Reader, options types.ImageBuildOptions) (types.ImageBuildResponse, error)
	ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error)
	ImageRemove(ctx context.Context, imageID string, options image.RemoveOptions) ([]image.DeleteResponse, error)
}

// NewDocker connects to the Docker engine DOCKER_HOST names (the local socket by default),
// negotiating the API version. It does no I/O until first used.
func NewDocker() (*client.Client, error) {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return c, nil
}

// Config tunes a Builder; only Engine is required.
type Config struct {
	Engine Engine
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
	resp, err := b.cfg.Engine.ImageBuild(ctx, bytes.NewReader(tarball), types.ImageBuildOptions{
		Tags:        []string{res.Image},
		Remove:      true,
		ForceRemove: true,
		PullParent:  false,
		Version:     types.BuilderV1,
	})
	if err != nil {
		return res, fmt.Errorf("build %s: %w", res.Image, timeoutOr(ctx, b.cfg.Timeout, err))
	}
	defer resp.Body.Close()
	out := readBuild(resp.Body, progress)
	res.Log = out.tail()
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("build %s: %w", res.Image, timeoutOr(ctx, b.cfg.Timeout, ctx.Err()))
	case out.err != "":
		return res, fmt.Errorf("build %s: %s", res.Image, Explain(out.err, out.lines))
	case out.readErr != nil:
		return res, fmt.Errorf("build %s: reading docker's answer: %w", res.Image, out.readErr)
	}
	res.ID = out.id
	return res, nil
}

func timeoutOr(ctx context.Context, limit time.Duration, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s", limit)
	}
	return err
}

// buildOutput is what a build's message stream said.
type buildOutput struct {
	lines   []string // the last lines of output
	id      string   // the image id (aux message)
	err     string   // the build's error, if it failed
	readErr error
}

func (o *buildOutput) add(line string) {
	o.lines = append(o.lines, line)
	if len(o.lines) > 4*logTailLines {
		o.lines = append(o.lines[:0], o.lines[len(o.lines)-logTailLines:]...)
	}
}

func (o *buildOutput) tail() string {
	l := o.lines
	if len(l) > logTailLines {
		l = l[len(l)-logTailLines:]
	}
	return strings.Join(l, "\n")
}

// message is one JSON message of Docker's build stream.
type message struct {
	Stream      string                    `json:"stream"`
	Status      string                    `json:"status"`
	Error       string                    `json:"error"`
	ErrorDetail *struct{ Message string } `json:"errorDetail"`
	Aux         json.RawMessage           `json:"aux"`
}

// ansi matches the colour escapes the classic builder puts around a step's standard error.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// readBuild decodes Docker's build stream, passing each output line to progress.
func readBuild(r io.Reader, progress func(string)) buildOutput {
	var out buildOutput
	dec := json.NewDecoder(r)
	var partial string
	emit := func(text string) {
		text = partial + text
		partial = ""
		for {
			i := strings.IndexByte(text, '\n')
			if i < 0 {
				partial = text
				return
			}
			line := strings.TrimRight(ansi.ReplaceAllString(text[:i], ""), "\r ")
			text = text[i+1:]
			if strings.TrimSpace(line) == "" {
				continue
			}
			out.add(line)
			if progress != nil {
				progress(line)
			}
		}
	}
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			if !errors.Is(err, io.EOF) {
				out.readErr = err
			}
			break
		}
		switch {
		case m.Error != "" || m.ErrorDetail != nil:
			out.err = m.Error
			if out.err == "" {
				out.err = m.ErrorDetail.Message
			}
		case len(m.Aux) > 0:
			var aux struct{ ID string }
			if json.Unmarshal(m.Aux, &aux) == nil && aux.ID != "" {
				out.id = aux.ID
			}
		case m.Stream != "":
			emit(m.Stream)
		case m.Status != "":
			emit(m.Status + "\n")
		}
	}
	if partial != "" {
		emit("\n")
	}
	return out
}

// Remove deletes the images of a function's versions other than keep (0 removes them all),
// found by their labels. An image a container still uses stays (Docker refuses) and is
// returned in inUse, to try again later; removed lists what went.
func (b *Builder) Remove(ctx context.Context, namespace, name string, keep int64) (removed, inUse []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	f := filters.NewArgs(
		filters.Arg("label", LabelNamespace+"="+namespace),
		filters.Arg("label", sv1.LabelFunction+"="+name))
	images, err := b.cfg.Engine.ImageList(ctx, image.ListOptions{Filters: f})
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
		for _, t := range img.RepoTags {
			if strings.HasPrefix(t, Repository(namespace, name)+":") {
				ref = t
			}
		}
		// Every tag goes: the id with more than one tag needs force, which still refuses an
		// image a running container uses.
		_, err := b.cfg.Engine.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true})
		switch {
		case err == nil || errdefs.IsNotFound(err):
			removed = append(removed, ref)
		case errdefs.IsConflict(err):
			inUse = append(inUse, ref)
		default:
			errs = append(errs, fmt.Errorf("remove image %s: %w", ref, err))
		}
	}
	return removed, inUse, errors.Join(errs...)
}
