package function

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/client"
	"minik8s.io/shared/record"
)

// BuildRequest is one image build: the source of one version of a function.
type BuildRequest struct {
	Namespace, Name string
	Version         int64
	// Image is the name to tag the result with (ImageName).
	Image        string
	Runtime      string
	Handler      string
	Source       map[string]string
	Requirements string
}

// Builder builds function images (through the Docker API, on the runtime base image).
type Builder interface {
	// Build builds req.Image and returns the tail of its output; progress is called with
	// lines worth showing as they come. An error says why the image could not be built
	// (a requirement pip could not install, a missing base image), with the log tail.
	Build(ctx context.Context, req BuildRequest, progress func(line string)) (log string, err error)
}

// Images puts function images on the nodes and takes them off.
type Images interface {
	// Distribute makes sure image is on every node in nodes (it was built on this host).
	Distribute(ctx context.Context, image string, nodes []*corev1.Node) error
	// Remove removes the images of the function namespace/name, but the one of version keep
	// (0: all of them), from this host and the nodes. Images a container still uses stay and
	// are listed in inUse, to try again later.
	Remove(ctx context.Context, namespace, name string, keep int64) (inUse []string, err error)
	// Functions lists the functions (namespace/name) this host holds images of.
	Functions(ctx context.Context) ([]string, error)
}

// Caller calls a function as the gateway does, for the schedules.
type Caller interface {
	Call(ctx context.Context, namespace, name string, body []byte) ([]byte, error)
}

// Recorder reports events (shared/record's Recorder, or its Fake in tests).
type Recorder = record.EventRecorder

// patchStatus applies a JSON merge patch to the Function's status subresource.
func patchStatus(ctx context.Context, w client.Writer[*serverlessv1.Function], namespace, name string, patch []byte) error {
	_, err := w.Patch(ctx, namespace, name, types.MergePatchType, patch, "status")
	return err
}
