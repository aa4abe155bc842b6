package autoscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// API is what the autoscaler writes.
type API interface {
	// ScaleDeployment sets a Deployment's replicas through its scale subresource.
	ScaleDeployment(ctx context.Context, namespace, name string, replicas int32) error
	// PatchFunctionStatus merge-patches a Function's status subresource with the autoscaler's
	// fields only.
	PatchFunctionStatus(ctx context.Context, namespace, name string, desired int32, lastCall *time.Time) error
}

type clientAPI struct {
	c           *client.Client
	deployments *scheme.Resource
	functions   *scheme.Resource
}

// NewClientAPI returns the API through the REST client.
func NewClientAPI(c *client.Client) (API, error) {
	deps, ok := scheme.ByGVR(appsv1.SchemeGroupVersion.WithResource("deployments"))
	if !ok {
		return nil, fmt.Errorf("the scheme has no deployments")
	}
	fns, ok := scheme.ByGVR(serverlessv1.SchemeGroupVersion.WithResource("functions"))
	if !ok {
		return nil, fmt.Errorf("the scheme has no functions")
	}
	return &clientAPI{c: c, deployments: deps, functions: fns}, nil
}

func (a *clientAPI) ScaleDeployment(ctx context.Context, namespace, name string, replicas int32) error {
	body := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	_, err := a.c.Patch(string(types.MergePatchType)).Resource(a.deployments, namespace, name, "scale").Body(body).Do(ctx)
	if err != nil {
		return fmt.Errorf("scale deployment %s/%s to %d: %w", namespace, name, replicas, err)
	}
	return nil
}

func (a *clientAPI) PatchFunctionStatus(ctx context.Context, namespace, name string, desired int32, lastCall *time.Time) error {
	st := map[string]any{"desiredReplicas": desired}
	if lastCall != nil {
		st["lastCallTime"] = lastCall.UTC().Format(time.RFC3339)
	}
	body, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	if _, err := a.c.Patch(string(types.MergePatchType)).Resource(a.functions, namespace, name, "status").Body(body).Do(ctx); err != nil {
		return fmt.Errorf("patch status of function %s/%s: %w", namespace, name, err)
	}
	return nil
}
