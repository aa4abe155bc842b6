package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/serverless/internal/build"
	"minik8s.io/serverless/internal/distribute"
	"minik8s.io/serverless/internal/function"
	"minik8s.io/serverless/internal/imagestore/dockerstore"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// images is the function controller's Builder and Images over the Docker engine of this host.
type images struct {
	docker      *client.Client
	cluster     string // the LabelCluster of this cluster's images
	builder     *build.Builder
	distributor *distribute.Distributor
	log         *slog.Logger
}

// newImages builds on this host's engine and sends images to the nodes' kubelets with token,
// the component's own.
func newImages(cfg Config, token string, log *slog.Logger) (*images, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if cfg.DockerHost != "" {
		opts = append(opts, client.WithHost(cfg.DockerHost))
	}
	dc, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	// Images are labeled with this cluster's name: another cluster on this host's engine
	// (make up's beside make cluster's) neither lists nor removes them as its own.
	cluster := clusterName(cfg.AMQPURL)
	store := dockerstore.New(dc)
	b := build.New(build.Config{Images: store, Base: cfg.RuntimeImage, Timeout: cfg.BuildTimeout, PipArgs: cfg.PipArgs, Cluster: cluster})
	d := distribute.New(distribute.Config{Images: store, Token: token, Timeout: cfg.BuildTimeout, Logger: log.With("part", "distribute")})
	return &images{docker: dc, cluster: cluster, builder: b, distributor: d, log: log}, nil
}

func (i *images) Build(ctx context.Context, req function.BuildRequest, progress func(string)) (string, error) {
	res, err := i.builder.Build(ctx, build.Source{Namespace: req.Namespace, Name: req.Name, Version: req.Version,
		Handler: req.Handler, Files: req.Source, Requirements: req.Requirements}, progress)
	return res.Log, err
}

func (i *images) Distribute(ctx context.Context, image string, nodes []*corev1.Node) error {
	results, err := i.distributor.Ensure(ctx, image, nodes)
	for _, r := range results {
		if r.Sent {
			i.log.Info("image sent to node", "image", image, "node", r.Node)
		}
	}
	return err
}

func (i *images) Remove(ctx context.Context, namespace, name string, keep int64) ([]string, error) {
	_, inUse, err := i.builder.Remove(ctx, namespace, name, keep)
	return inUse, err
}

func (i *images) Functions(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := i.docker.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", build.LabelNamespace),
		filters.Arg("label", build.LabelCluster+"="+i.cluster))})
	if err != nil {
		return nil, fmt.Errorf("list function images: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, img := range list {
		ns, name := img.Labels[build.LabelNamespace], img.Labels[serverlessv1.LabelFunction]
		if ns == "" || name == "" || strings.Contains(ns, "/") {
			continue
		}
		if k := ns + "/" + name; !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out, nil
}
