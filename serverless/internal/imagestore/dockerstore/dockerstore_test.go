package dockerstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"minik8s.io/serverless/internal/imagestore/dockerstore"
	"minik8s.io/serverless/internal/imagestore/storetest"
)

// base is built by make images; its /pause runs until stopped, so a container of an image
// built on it keeps the image in use.
const base = "minik8s/pause:1.0"

// TestContract runs the image store contract against the Docker engine DOCKER_HOST names
// (the local socket by default). It builds and removes only images under
// storetest.Repository and runs only containers it names mk8s-storetest-*.
func TestContract(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Docker engine; skipped under -short")
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		t.Fatalf("Docker does not answer (%v): start dockerd or set DOCKER_HOST, or run with -short", err)
	}
	if _, _, err := cli.ImageInspectWithRaw(ctx, base); err != nil {
		t.Fatalf("no %s on this engine (make images builds it): %v", base, err)
	}
	store := dockerstore.New(cli)
	storetest.Run(t, func(t *testing.T) storetest.Env {
		return storetest.Env{Store: store, Base: base, Use: func(t *testing.T, ref string) { use(t, cli, ref) }}
	})
}

// use runs a container of ref until the test ends.
func use(t *testing.T, cli *client.Client, ref string) {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "mk8s-storetest-" + hex.EncodeToString(b)
	c, err := cli.ContainerCreate(t.Context(), &container.Config{Image: ref, Labels: map[string]string{storetest.LabelTest: "use"}},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, name)
	if err != nil {
		t.Fatalf("create a container of %s: %v", ref, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Errorf("remove container %s: %v", name, err)
		}
	})
	if err := cli.ContainerStart(t.Context(), c.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start a container of %s: %v", ref, err)
	}
}
