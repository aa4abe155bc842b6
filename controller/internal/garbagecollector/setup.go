package garbagecollector

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
	"minik8s.io/shared/scheme"
)

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	infs := map[string]*informer.Informer{}
	for _, res := range Collected() {
		infs[res.Plural] = c.Informers.MetadataFor(res.Plural, informer.Indexers{OwnerIndex: OwnerIndexFunc})
	}
	cfg := Config{
		Informers: infs,
		Metadata: func(res *scheme.Resource) client.Writer[*metav1.PartialObjectMetadata] {
			return client.Metadata(c.Client, res)
		},
		Options: reconcile.Options{Logger: c.Logger},
	}
	if c.Client != nil {
		cfg.Discovery = c.Client
		cfg.List = func(ctx context.Context, res *scheme.Resource) ([]metav1.PartialObjectMetadata, error) {
			list, err := client.Metadata(c.Client, res).List(ctx, "", metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return list.Items, nil
		}
	}
	gc := New(cfg)
	if c.Deletions != nil {
		c.Deletions.Subscribe(func(resource string, obj *metav1.PartialObjectMetadata) { gc.OwnerDeleted(resource, obj) })
	}
	return gc
}
