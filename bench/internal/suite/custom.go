package suite

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/bench/internal/stats"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// The custom resource the extension tests create: namespaced, with a structural schema of a
// few typed fields, one of them defaulted, and a status subresource.
const (
	benchGroup   = "bench.minik8s.io"
	benchVersion = "v1"
	benchKind    = "BenchItem"
	benchPlural  = "benchitems"
	benchCRDName = benchPlural + "." + benchGroup
	// noteDefaulted is what the schema's default puts in spec.mode, which the objects leave
	// unset so that every create runs defaulting.
	noteDefaulted = "fast"
)

// benchItems is the custom resource as the client addresses it: what the apiserver builds
// from the definition, which the client needs only for paths and decoding.
var benchItems = func() *scheme.Resource {
	gvk := schema.GroupVersionKind{Group: benchGroup, Version: benchVersion, Kind: benchKind}
	return &scheme.Resource{GVK: gvk, Plural: benchPlural, Singular: strings.ToLower(benchKind), Namespaced: true,
		Subresources: []string{"status"}, Custom: true, StorageVersion: benchVersion,
		New: func() runtime.Object {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetGroupVersionKind(gvk)
			return u
		},
		NewList: func() runtime.Object {
			l := &unstructured.UnstructuredList{Object: map[string]any{}}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind(benchKind + "List"))
			return l
		}}
}()

// benchCRD defines benchItems.
func benchCRD() *apiextensionsv1.CustomResourceDefinition {
	str := func() apiextensionsv1.JSONSchemaProps { return apiextensionsv1.JSONSchemaProps{Type: "string"} }
	zero := 0.0
	mode := str()
	mode.Enum = []apiextensionsv1.JSON{{Raw: []byte(`"fast"`)}, {Raw: []byte(`"safe"`)}}
	mode.Default = &apiextensionsv1.JSON{Raw: []byte(strconv.Quote(noteDefaulted))}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: benchCRDName},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: benchGroup,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: benchPlural, Singular: strings.ToLower(benchKind), Kind: benchKind},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: benchVersion, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Required: []string{"note"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"replicas": {Type: "integer", Minimum: &zero},
							"mode":     mode,
							"note":     str(),
							"enabled":  {Type: "boolean"},
						}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"observed": {Type: "integer"},
						}},
					},
				}},
			}},
		},
	}
}

// createCRD creates the definition and waits until its resource answers a list, as a client of
// a freshly installed operator would.
func (e *env) createCRD(ctx context.Context) error {
	if _, err := e.api.Post().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions").Body(benchCRD()).Do(ctx); err != nil {
		return fmt.Errorf("create custom resource definition %s: %w", benchCRDName, err)
	}
	items := client.Dynamic(e.api, benchItems)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := items.List(ctx, Namespace, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("custom resource %s not served 30 s after its definition: %w", benchCRDName, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// benchItem is one custom object; note carries the payload that sizes it.
func benchItem(name, note string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": int64(1), "enabled": true, "note": note},
	}}
	u.SetGroupVersionKind(benchItems.GVK)
	u.SetName(name)
	u.SetNamespace(Namespace)
	return u
}

// createItem makes one custom object and returns its revision.
func createItem(ctx context.Context, items *client.Unstructured, name, note string) (int64, error) {
	_, rev, err := createItemObject(ctx, items, name, note)
	return rev, err
}

// createItemObject makes one custom object and returns it as created, and its revision.
func createItemObject(ctx context.Context, items *client.Unstructured, name, note string) (*unstructured.Unstructured, int64, error) {
	got, err := items.Create(ctx, benchItem(name, note), metav1.CreateOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("create %s %s: %w", benchKind, name, err)
	}
	rev, err := strconv.ParseInt(got.GetResourceVersion(), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: resourceVersion %q: %w", benchKind, name, got.GetResourceVersion(), err)
	}
	return got, rev, nil
}

// defaulted reports whether the apiserver applied the schema's default to a created object:
// without it the schema work (validation, pruning, defaulting) is not being done, and the
// figures leave out its cost.
func defaulted(obj *unstructured.Unstructured) bool {
	mode, _, _ := unstructured.NestedString(obj.Object, "spec", "mode")
	return mode == noteDefaulted
}

// storedSize is the size of what the apiserver stored under key.
func (e *env) storedSize(ctx context.Context, key string) (int, error) {
	resp, err := e.etcd.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", key, err)
	}
	if len(resp.Kvs) != 1 {
		return 0, fmt.Errorf("read %s: not found; is the apiserver using this etcd?", key)
	}
	return len(resp.Kvs[0].Value), nil
}

func itemKey(name string) string {
	return "/registry/" + benchItems.StoragePlural() + "/" + Namespace + "/" + name
}

// noteLength is the note length that makes a custom object stored in got bytes with a note of
// noteLen bytes come out at want bytes, as near as a non-negative length can.
func noteLength(noteLen, got, want int) int {
	return max(noteLen+want-got, 0)
}

// sizeNote picks the custom objects' note so that they are stored in as many bytes as the
// ConfigMaps (want): a probe object measures the rest of the object. It also reports whether
// the probe was defaulted.
func (e *env) sizeNote(ctx context.Context, items *client.Unstructured, want int) (note string, size int, schema bool, err error) {
	note = payload(e.cfg.PayloadBytes)
	for i := range 2 {
		name := fmt.Sprintf("size-%d", i)
		obj, _, err := createItemObject(ctx, items, name, note)
		if err != nil {
			return "", 0, false, err
		}
		schema = defaulted(obj)
		got, err := e.storedSize(ctx, itemKey(name))
		if err != nil {
			return "", 0, false, err
		}
		if got == want || i == 1 {
			return note, got, schema, nil
		}
		note = payload(noteLength(len(note), got, want))
	}
	return "", 0, false, errors.New("unreachable")
}

// customResources runs tests 4 and 5: custom object creates against ConfigMap creates, both as
// admin, one client alternating blocks, then Clients clients alternating rounds.
func (e *env) customResources(ctx context.Context, x *ExtensionsReport) error {
	if err := e.createCRD(ctx); err != nil {
		return err
	}
	admin, err := e.proc.Client(10 * time.Second)
	if err != nil {
		return err
	}
	items, cms := client.Dynamic(admin, benchItems), configMaps(admin)
	cmSize, err := e.storedSize(ctx, "/registry/configmaps/"+Namespace+"/warm-0")
	if err != nil {
		return err
	}
	note, size, schema, err := e.sizeNote(ctx, items, cmSize)
	if err != nil {
		return err
	}
	x.ConfigMapBytes, x.CustomBytes, x.SchemaApplied = cmSize, size, schema
	if !schema {
		e.log.Warn("the apiserver did not apply the schema's default: its custom resource figures leave out the schema's validation, pruning and defaulting")
	}

	cfg := e.cfg
	for i := range cfg.Warmup {
		if _, err := createItem(ctx, items, fmt.Sprintf("warm-%d", i), note); err != nil {
			return err
		}
		if _, err := e.create(ctx, cms, fmt.Sprintf("xwarm-%d", i), time.Time{}); err != nil {
			return err
		}
	}
	cr, cm := stats.NewRecorder(cfg.Creates), stats.NewRecorder(cfg.Creates)
	for start := 0; start < cfg.Creates; start += cfg.Block {
		end := min(start+cfg.Block, cfg.Creates)
		var last int64
		for i := start; i < end; i++ {
			t0 := time.Now()
			rev, err := createItem(ctx, items, fmt.Sprintf("lat-%d", i), note)
			if err != nil {
				return err
			}
			cr.Add(time.Since(t0))
			last = rev
		}
		if err := e.waitOutbox(ctx, last); err != nil {
			return err
		}
		for i := start; i < end; i++ {
			t0 := time.Now()
			rev, err := e.create(ctx, cms, fmt.Sprintf("xlat-%d", i), time.Time{})
			if err != nil {
				return err
			}
			cm.Add(time.Since(t0))
			last = rev
		}
		if err := e.waitOutbox(ctx, last); err != nil {
			return err
		}
	}
	x.CreateCustom, x.CreateConfigMap = cr.Summary(), cm.Summary()
	e.log.Info("custom resource create latency", "custom", x.CreateCustom.String(), "configmap", x.CreateConfigMap.String())
	return e.customThroughput(ctx, x, note)
}

// customThroughput is test 5: Clients admin clients creating custom objects, then ConfigMaps,
// Rounds times.
func (e *env) customThroughput(ctx context.Context, x *ExtensionsReport, note string) error {
	cfg := e.cfg
	type pair struct {
		items *client.Unstructured
		cms   *client.Typed[*corev1.ConfigMap, *corev1.ConfigMapList]
	}
	clients := make([]pair, cfg.Clients)
	for w := range clients {
		c, err := e.proc.Client(10 * time.Second)
		if err != nil {
			return err
		}
		clients[w] = pair{client.Dynamic(c, benchItems), configMaps(c)}
		// Connect (TLS handshake) before the clock starts; both share the connection.
		if _, err := createItem(ctx, clients[w].items, fmt.Sprintf("tp-warm-%d", w), note); err != nil {
			return err
		}
	}
	var ops [2]int
	var took [2]time.Duration
	var cpu [2]CPUPerOp
	for r := range cfg.Rounds {
		var prof *profile
		if cfg.Profile && r == 0 {
			prof = e.startProfile(ctx, "custom-throughput", cfg.RoundTime)
		}
		before := e.sampleCPU()
		n, d, last, err := e.runWriters(ctx, cfg.Clients, cfg.RoundTime, func(ctx context.Context, w, i int) (int64, error) {
			return createItem(ctx, clients[w].items, fmt.Sprintf("tp-%d-%d-%d", r, w, i), note)
		})
		if err != nil {
			return err
		}
		if prof != nil {
			res := prof.wait()
			e.log.Info("custom resource throughput profile", "path", res.Path, "top", res.Top)
		}
		cpu[0] = cpu[0].add(perOp(before, e.sampleCPU(), n))
		ops[0], took[0] = ops[0]+n, took[0]+d
		if err := e.waitOutbox(ctx, last); err != nil {
			return err
		}
		before = e.sampleCPU()
		n, d, last, err = e.runWriters(ctx, cfg.Clients, cfg.RoundTime, func(ctx context.Context, w, i int) (int64, error) {
			return e.create(ctx, clients[w].cms, fmt.Sprintf("xtp-%d-%d-%d", r, w, i), time.Time{})
		})
		if err != nil {
			return err
		}
		cpu[1] = cpu[1].add(perOp(before, e.sampleCPU(), n))
		ops[1], took[1] = ops[1]+n, took[1]+d
		if err := e.waitOutbox(ctx, last); err != nil {
			return err
		}
	}
	x.ThroughputCustom, x.ThroughputConfigMap = stats.Rate(ops[0], took[0]), stats.Rate(ops[1], took[1])
	x.ThroughputOps = ops
	x.ThroughputCPU = [2]CPUPerOp{cpu[0].div(cfg.Rounds), cpu[1].div(cfg.Rounds)}
	e.log.Info("custom resource throughput", "custom", x.ThroughputCustom, "configmap", x.ThroughputConfigMap)
	return nil
}
