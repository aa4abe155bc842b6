package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/scheme"
)

// Typed reads and writes one resource, decoding objects as T and lists as L.
type Typed[T runtime.Object, L runtime.Object] struct {
	c       *Client
	res     *scheme.Resource
	newObj  func() T
	newList func() L
	decode  func(data []byte, into runtime.Object) error
	// accept, when set, is the Accept header of reads (Metadata asks for PartialObjectMetadata).
	accept string
}

// For gives typed access to res, e.g. For[*corev1.Pod, *corev1.PodList](c, podsResource).
// T and L must be the types res.New and res.NewList return; a mismatch is a programming error
// and panics here rather than at the first request.
func For[T runtime.Object, L runtime.Object](c *Client, res *scheme.Resource) *Typed[T, L] {
	if _, ok := res.New().(T); !ok {
		panic(fmt.Sprintf("client.For: %T is not the object type of %s", *new(T), res.Plural))
	}
	if _, ok := res.NewList().(L); !ok {
		panic(fmt.Sprintf("client.For: %T is not the list type of %s", *new(L), res.Plural))
	}
	return &Typed[T, L]{
		c:       c,
		res:     res,
		newObj:  func() T { return res.New().(T) },
		newList: func() L { return res.NewList().(L) },
		decode:  func(data []byte, into runtime.Object) error { return json.Unmarshal(data, into) },
	}
}

// MustFor is For with the resource found from T's kind in the scheme.
func MustFor[T runtime.Object, L runtime.Object](c *Client) *Typed[T, L] {
	// T is a pointer type; ObjectKinds needs a non-nil value of it.
	obj, ok := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(runtime.Object)
	if !ok {
		panic(fmt.Sprintf("client.MustFor: %v is not a pointer to an object", reflect.TypeFor[T]()))
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		panic(fmt.Sprintf("client.MustFor: %T is not registered in the scheme: %v", obj, err))
	}
	res, ok := scheme.ByGVK(gvks[0])
	if !ok {
		panic(fmt.Sprintf("client.MustFor: %s is not a served resource", gvks[0]))
	}
	return For[T, L](c, res)
}

// Unstructured is access to any resource without its Go type, as kubectl needs for manifests.
type Unstructured = Typed[*unstructured.Unstructured, *unstructured.UnstructuredList]

// Dynamic gives unstructured access to res.
func Dynamic(c *Client, res *scheme.Resource) *Unstructured {
	return &Unstructured{
		c:       c,
		res:     res,
		newObj:  func() *unstructured.Unstructured { return &unstructured.Unstructured{} },
		newList: func() *unstructured.UnstructuredList { return &unstructured.UnstructuredList{} },
		decode:  decodeUnstructured(res),
	}
}

// MetadataAccept asks the apiserver for objects as PartialObjectMetadata and lists as
// PartialObjectMetadataList; it picks the form that fits the answer.
const MetadataAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

// PartialMetadata is access to the metadata of a resource's objects, without their spec and
// status: what the garbage collector reads of every kind.
type PartialMetadata = Typed[*metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList]

// Metadata gives access to res's objects as PartialObjectMetadata. The apiserver sends them as
// kind PartialObjectMetadata; they are given res's apiVersion and kind instead, so an object
// read here names what it is (as an owner reference must).
func Metadata(c *Client, res *scheme.Resource) *PartialMetadata {
	apiVersion, kind := res.GVK.ToAPIVersionAndKind()
	return &PartialMetadata{
		c:       c,
		res:     res,
		newObj:  func() *metav1.PartialObjectMetadata { return &metav1.PartialObjectMetadata{} },
		newList: func() *metav1.PartialObjectMetadataList { return &metav1.PartialObjectMetadataList{} },
		accept:  MetadataAccept,
		decode: func(data []byte, into runtime.Object) error {
			if err := json.Unmarshal(data, into); err != nil {
				return err
			}
			switch out := into.(type) {
			case *metav1.PartialObjectMetadata:
				out.APIVersion, out.Kind = apiVersion, kind
			case *metav1.PartialObjectMetadataList:
				for i := range out.Items {
					out.Items[i].APIVersion, out.Items[i].Kind = apiVersion, kind
				}
			}
			return nil
		},
	}
}

// Resource is the resource this client addresses.
func (t *Typed[T, L]) Resource() *scheme.Resource { return t.res }

// Get reads one object.
func (t *Typed[T, L]) Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (T, error) {
	return t.into(ctx, t.read(t.c.Get().Resource(t.res, namespace, name).Param("resourceVersion", opts.ResourceVersion)))
}

// List reads a collection; an empty namespace lists all namespaces.
func (t *Typed[T, L]) List(ctx context.Context, namespace string, opts metav1.ListOptions) (L, error) {
	out := t.newList()
	data, err := t.read(t.c.Get().Resource(t.res, namespace, "").Params(ListQuery(opts))).Do(ctx)
	if err != nil {
		return out, err
	}
	if err := t.decode(data, out); err != nil {
		return out, fmt.Errorf("decode %s list: %w", t.res.Plural, err)
	}
	return out, nil
}

// Create creates obj in the namespace its metadata names.
func (t *Typed[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	ns, body, err := t.encode(obj)
	if err != nil {
		return t.newObj(), err
	}
	return t.into(ctx, t.c.Post().Resource(t.res, ns, "").Params(writeQuery(opts.DryRun, opts.FieldManager, opts.FieldValidation)).Body(body))
}

// Update replaces obj; its resourceVersion guards against lost updates (409 Conflict).
func (t *Typed[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return t.put(ctx, obj, opts, "")
}

// UpdateStatus replaces obj's status through the status subresource.
func (t *Typed[T, L]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return t.put(ctx, obj, opts, "status")
}

func (t *Typed[T, L]) put(ctx context.Context, obj T, opts metav1.UpdateOptions, sub string) (T, error) {
	ns, body, err := t.encode(obj)
	if err != nil {
		return t.newObj(), err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return t.newObj(), fmt.Errorf("update %s: %w", t.res.Plural, err)
	}
	return t.into(ctx, t.c.Put().Resource(t.res, ns, m.GetName(), sub).Params(writeQuery(opts.DryRun, opts.FieldManager, opts.FieldValidation)).Body(body))
}

// Patch applies a merge, strategic merge or JSON patch to an object or one of its subresources.
func (t *Typed[T, L]) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, subresource ...string) (T, error) {
	return t.PatchWithOptions(ctx, namespace, name, pt, data, metav1.PatchOptions{}, subresource...)
}

// PatchWithOptions is Patch with dry run, field manager or field validation.
func (t *Typed[T, L]) PatchWithOptions(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresource ...string) (T, error) {
	return t.into(ctx, t.read(t.c.Patch(string(pt)).Resource(t.res, namespace, name, subresource...).Params(writeQuery(opts.DryRun, opts.FieldManager, opts.FieldValidation)).Body(data)))
}

// Delete deletes one object. The options go both in the body, as Kubernetes clients send
// them, and as query parameters, which the apiserver also reads.
func (t *Typed[T, L]) Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	_, err := t.c.Delete().Resource(t.res, namespace, name).Params(deleteQuery(opts)).Body(deleteBody(opts)).Do(ctx)
	return err
}

// DeleteCollection deletes every object of the namespace that matches the list options.
func (t *Typed[T, L]) DeleteCollection(ctx context.Context, namespace string, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	q := ListQuery(listOpts)
	for k, v := range deleteQuery(opts) {
		q[k] = v
	}
	_, err := t.c.Delete().Resource(t.res, namespace, "").Params(q).Body(deleteBody(opts)).Do(ctx)
	return err
}

// Watch streams changes; the stream ends when ctx ends, Stop is called, or the server closes
// it (after timeoutSeconds). ERROR events carry a *metav1.Status.
func (t *Typed[T, L]) Watch(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	body, err := t.read(t.c.Get().Resource(t.res, namespace, "").Params(ListQuery(opts))).Stream(ctx)
	if err != nil {
		return nil, err
	}
	return newStreamWatcher(ctx, body, func(raw []byte) (runtime.Object, error) {
		obj := t.newObj()
		return obj, t.decode(raw, obj)
	}), nil
}

// read sets the client's Accept header, if it has one, on a request whose answer it decodes
// (a metadata client's patch answers metadata too).
func (t *Typed[T, L]) read(r *Request) *Request {
	if t.accept != "" {
		r.Accept(t.accept)
	}
	return r
}

func (t *Typed[T, L]) into(ctx context.Context, r *Request) (T, error) {
	out := t.newObj()
	data, err := r.Do(ctx)
	if err != nil {
		return out, err
	}
	if err := t.decode(data, out); err != nil {
		return out, fmt.Errorf("decode %s: %w", t.res.Singular, err)
	}
	return out, nil
}

// encode returns obj's namespace and JSON with apiVersion and kind filled, without changing
// the caller's object: typed objects usually leave TypeMeta empty.
func (t *Typed[T, L]) encode(obj T) (string, []byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", nil, fmt.Errorf("encode %s: %w", t.res.Singular, err)
	}
	ns := m.GetNamespace()
	if !t.res.Namespaced {
		ns = ""
	} else if ns == "" {
		return "", nil, fmt.Errorf("%s %q: metadata.namespace is required", t.res.Singular, m.GetName())
	}
	if obj.GetObjectKind().GroupVersionKind().Kind == "" {
		cp := obj.DeepCopyObject()
		cp.GetObjectKind().SetGroupVersionKind(t.res.GVK)
		obj = cp.(T)
	}
	data, err := scheme.MarshalJSON(obj)
	if err != nil {
		return "", nil, fmt.Errorf("encode %s: %w", t.res.Singular, err)
	}
	return ns, data, nil
}

// ListQuery encodes list and watch options as the apiserver reads them.
func ListQuery(o metav1.ListOptions) url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("labelSelector", o.LabelSelector)
	set("fieldSelector", o.FieldSelector)
	set("resourceVersion", o.ResourceVersion)
	set("resourceVersionMatch", string(o.ResourceVersionMatch))
	set("continue", o.Continue)
	if o.Limit > 0 {
		q.Set("limit", strconv.FormatInt(o.Limit, 10))
	}
	if o.TimeoutSeconds != nil {
		q.Set("timeoutSeconds", strconv.FormatInt(*o.TimeoutSeconds, 10))
	}
	if o.Watch {
		q.Set("watch", "true")
	}
	if o.AllowWatchBookmarks {
		q.Set("allowWatchBookmarks", "true")
	}
	return q
}

func writeQuery(dryRun []string, fieldManager, fieldValidation string) url.Values {
	q := url.Values{}
	for _, d := range dryRun {
		q.Add("dryRun", d)
	}
	if fieldManager != "" {
		q.Set("fieldManager", fieldManager)
	}
	if fieldValidation != "" {
		q.Set("fieldValidation", fieldValidation)
	}
	return q
}

func deleteQuery(o metav1.DeleteOptions) url.Values {
	q := writeQuery(o.DryRun, "", "")
	if o.GracePeriodSeconds != nil {
		q.Set("gracePeriodSeconds", strconv.FormatInt(*o.GracePeriodSeconds, 10))
	}
	if o.PropagationPolicy != nil {
		q.Set("propagationPolicy", string(*o.PropagationPolicy))
	}
	return q
}

func deleteBody(o metav1.DeleteOptions) *metav1.DeleteOptions {
	o.TypeMeta = metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"}
	return &o
}

// decodeUnstructured decodes objects and lists without their Go types. Numbers become int64 or
// float64 as unstructured helpers expect, and list items get the apiVersion and kind the
// apiserver leaves off them.
func decodeUnstructured(res *scheme.Resource) func([]byte, runtime.Object) error {
	return func(data []byte, into runtime.Object) error {
		var m map[string]any
		if err := utiljson.Unmarshal(data, &m); err != nil {
			return err
		}
		switch out := into.(type) {
		case *unstructured.Unstructured:
			out.Object = m
			if out.GetKind() == "" {
				out.SetGroupVersionKind(res.GVK)
			}
			return nil
		case *unstructured.UnstructuredList:
			items, _ := m["items"].([]any)
			delete(m, "items")
			out.Object = m
			apiVersion, _ := m["apiVersion"].(string)
			kind := strings.TrimSuffix(fmt.Sprint(m["kind"]), "List")
			if apiVersion == "" || kind == "" || kind == "<nil>" {
				apiVersion, kind = res.GVK.GroupVersion().String(), res.GVK.Kind
			}
			out.Items = make([]unstructured.Unstructured, 0, len(items))
			for i, it := range items {
				obj, ok := it.(map[string]any)
				if !ok {
					return fmt.Errorf("items[%d] is not an object", i)
				}
				u := unstructured.Unstructured{Object: obj}
				if u.GetKind() == "" {
					u.SetAPIVersion(apiVersion)
					u.SetKind(kind)
				}
				out.Items = append(out.Items, u)
			}
			return nil
		}
		return fmt.Errorf("cannot decode into %T", into)
	}
}
