package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/scheme"
)

// TableAccept asks the apiserver to render objects as a meta.k8s.io/v1 Table.
const TableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// GetTable renders one object as a Table.
func (c *Client) GetTable(ctx context.Context, res *scheme.Resource, namespace, name string) (*metav1.Table, error) {
	return c.table(ctx, c.Get().Resource(res, namespace, name))
}

// ListTable renders a collection as a Table; an empty namespace lists all namespaces.
func (c *Client) ListTable(ctx context.Context, res *scheme.Resource, namespace string, opts metav1.ListOptions) (*metav1.Table, error) {
	return c.table(ctx, c.Get().Resource(res, namespace, "").Params(ListQuery(opts)))
}

func (c *Client) table(ctx context.Context, r *Request) (*metav1.Table, error) {
	t := &metav1.Table{}
	if err := r.Accept(TableAccept).Into(ctx, t); err != nil {
		return nil, err
	}
	if t.Kind != "Table" {
		return nil, fmt.Errorf("server answered %s %s with %q, not a Table", r.verb, r.path, t.Kind)
	}
	return t, nil
}

// WatchTable streams changes as Tables of one row each; only the first may carry column
// definitions, as with the real apiserver.
func (c *Client) WatchTable(ctx context.Context, res *scheme.Resource, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	body, err := c.Get().Resource(res, namespace, "").Params(ListQuery(opts)).Accept(TableAccept).Stream(ctx)
	if err != nil {
		return nil, err
	}
	return newStreamWatcher(ctx, body, func(raw []byte) (runtime.Object, error) {
		t := &metav1.Table{}
		return t, json.Unmarshal(raw, t)
	}), nil
}

// ServerVersion reads /version.
func (c *Client) ServerVersion(ctx context.Context) (*version.Info, error) {
	v := &version.Info{}
	if err := c.Get().AbsPath("/version").Into(ctx, v); err != nil {
		return nil, fmt.Errorf("server version: %w", err)
	}
	return v, nil
}

// ServerGroups reads /apis, the named API groups (the core group is always at /api/v1).
func (c *Client) ServerGroups(ctx context.Context) (*metav1.APIGroupList, error) {
	l := &metav1.APIGroupList{}
	if err := c.Get().AbsPath("/apis").Into(ctx, l); err != nil {
		return nil, fmt.Errorf("discover groups: %w", err)
	}
	return l, nil
}

// ServerResources reads the resources of one group version: "v1" for the core group,
// "apps/v1" and the like for the others.
func (c *Client) ServerResources(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error) {
	p := "/apis/" + groupVersion
	if groupVersion == "v1" {
		p = "/api/v1"
	}
	l := &metav1.APIResourceList{}
	if err := c.Get().AbsPath(p).Into(ctx, l); err != nil {
		return nil, fmt.Errorf("discover %s: %w", groupVersion, err)
	}
	if l.GroupVersion == "" {
		l.GroupVersion = groupVersion
	}
	return l, nil
}

// podsResource is looked up once; the scheme always serves pods.
func podsResource() *scheme.Resource {
	r, _ := scheme.Lookup("pods")
	return r
}

// Logs streams a container's log (pods/<name>/log). With Follow it stays open until ctx ends
// or the container stops; the caller closes the returned reader.
func (c *Client) Logs(ctx context.Context, namespace, pod string, opts corev1.PodLogOptions) (io.ReadCloser, error) {
	r := c.Get().Resource(podsResource(), namespace, pod, "log").Accept("*/*").
		Param("container", opts.Container)
	if opts.Follow {
		r.Param("follow", "true")
	}
	if opts.Previous {
		r.Param("previous", "true")
	}
	if opts.Timestamps {
		r.Param("timestamps", "true")
	}
	if opts.TailLines != nil {
		r.Param("tailLines", fmt.Sprint(*opts.TailLines))
	}
	if opts.SinceSeconds != nil {
		r.Param("sinceSeconds", fmt.Sprint(*opts.SinceSeconds))
	}
	if opts.LimitBytes != nil {
		r.Param("limitBytes", fmt.Sprint(*opts.LimitBytes))
	}
	// Even without follow a log can be long: stream it rather than buffer it under the
	// request timeout.
	return r.Stream(ctx)
}
