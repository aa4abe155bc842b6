package garbagecollector

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/controller/internal/discovery"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/informer/informertest"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/scheme"
	"minik8s.io/shared/testwait"
	"minik8s.io/shared/workqueue/clock"
)

const demoGV = "demo.minik8s.io/v1"

// fakeDiscovery answers ServerResources from answers by group version: a list, or an error
// (an apierror NotFound for a group version not served), and ServerGroups with the group
// versions answered with a list (or groupsErr). It counts the ServerResources calls.
type fakeDiscovery struct {
	mu        sync.Mutex
	answers   map[string]any
	groupsErr error
	calls     int
}

func (f *fakeDiscovery) ServerGroups(context.Context) (*metav1.APIGroupList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.groupsErr != nil {
		return nil, f.groupsErr
	}
	byName := map[string]*metav1.APIGroup{}
	list := &metav1.APIGroupList{}
	for gvs, a := range f.answers {
		if _, ok := a.(*metav1.APIResourceList); !ok {
			continue
		}
		gv, _ := schema.ParseGroupVersion(gvs)
		g := byName[gv.Group]
		if g == nil {
			list.Groups = append(list.Groups, metav1.APIGroup{Name: gv.Group})
			g = &list.Groups[len(list.Groups)-1]
			byName[gv.Group] = g
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gvs, Version: gv.Version}
		g.Versions = append(g.Versions, v)
		g.PreferredVersion = v
	}
	return list, nil
}

func (f *fakeDiscovery) ServerResources(_ context.Context, gv string) (*metav1.APIResourceList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	switch a := f.answers[gv].(type) {
	case *metav1.APIResourceList:
		return a.DeepCopy(), nil
	case error:
		return nil, a
	}
	return nil, apierror.New(apierror.ErrNotFound, "%s not found", gv)
}

func (f *fakeDiscovery) set(gv string, answer any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[gv] = answer
}

func (f *fakeDiscovery) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// echoApps is demo.minik8s.io/v1 as a CustomResourceDefinition of EchoApps (namespaced, with a
// status subresource) and Clusters (cluster-scoped) serves it.
func echoApps() *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: demoGV, APIResources: []metav1.APIResource{
		{Name: "echoapps", SingularName: "echoapp", Namespaced: true, Kind: "EchoApp", Verbs: metav1.Verbs{"get", "list", "delete", "deletecollection"}},
		{Name: "echoapps/status", Namespaced: true, Kind: "EchoApp", Verbs: metav1.Verbs{"get", "patch"}},
		{Name: "clusters", SingularName: "cluster", Kind: "Cluster", Verbs: metav1.Verbs{"get"}},
	}}
}

func partial(apiVersion, kind, namespace, name, uid string, refs ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(uid), OwnerReferences: refs},
	}
}

// writers hands out one fake metadata writer per resource, and records the resources asked for.
type writers struct {
	mu    sync.Mutex
	byRes map[string]*fake.Writer[*metav1.PartialObjectMetadata]
	asked []*scheme.Resource
}

func newWriters() *writers {
	return &writers{byRes: map[string]*fake.Writer[*metav1.PartialObjectMetadata]{}}
}

func (w *writers) of(plural string) *fake.Writer[*metav1.PartialObjectMetadata] {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.byRes[plural]
	if f == nil {
		f = fake.New(func() *metav1.PartialObjectMetadata { return &metav1.PartialObjectMetadata{} })
		w.byRes[plural] = f
	}
	return f
}

func (w *writers) metadata(res *scheme.Resource) client.Writer[*metav1.PartialObjectMetadata] {
	w.mu.Lock()
	w.asked = append(w.asked, res)
	w.mu.Unlock()
	return w.of(res.Plural)
}

func TestOwnerStateOfCustomKinds(t *testing.T) {
	deployments, _ := scheme.Lookup("deployments")
	clusterRoles, _ := scheme.Lookup("clusterroles")
	foreground := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "u1",
		DeletionTimestamp: &metav1.Time{Time: time.Unix(1, 0)}, Finalizers: []string{metav1.FinalizerDeleteDependents}}}
	ref := func(apiVersion, kind, name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid)}
	}
	cases := []struct {
		name      string
		discovery any // the answer for demo.minik8s.io/v1
		// v2 is the answer for demo.minik8s.io/v2 (none: not served); groupsErr ServerGroups'.
		v2        any
		groupsErr error
		owners    []*metav1.PartialObjectMetadata
		dependent *scheme.Resource
		ref       metav1.OwnerReference
		want      OwnerState
		wantErr   bool
		// wantRes is the resource the owner was looked up as; nil: none was.
		wantRes *scheme.Resource
	}{
		{name: "served and present", discovery: echoApps(), owners: []*metav1.PartialObjectMetadata{partial(demoGV, "EchoApp", "ns", "app", "u1")},
			dependent: deployments, ref: ref(demoGV, "EchoApp", "app", "u1"), want: OwnerExists,
			wantRes: &scheme.Resource{GVK: schema.GroupVersionKind{Group: "demo.minik8s.io", Version: "v1", Kind: "EchoApp"},
				Plural: "echoapps", Singular: "echoapp", Namespaced: true, Subresources: []string{"status"}, DeleteCollection: true, Custom: true}},
		{name: "served and waiting for its dependents", discovery: echoApps(), owners: []*metav1.PartialObjectMetadata{foreground},
			dependent: deployments, ref: ref(demoGV, "EchoApp", "app", "u1"), want: OwnerDeletingDependents},
		{name: "served and absent", discovery: echoApps(),
			dependent: deployments, ref: ref(demoGV, "EchoApp", "app", "u1"), want: OwnerAbsent},
		{name: "served, the name taken by another object", discovery: echoApps(), owners: []*metav1.PartialObjectMetadata{partial(demoGV, "EchoApp", "ns", "app", "u2")},
			dependent: deployments, ref: ref(demoGV, "EchoApp", "app", "u1"), want: OwnerAbsent},
		{name: "cluster-scoped custom owner", discovery: echoApps(), owners: []*metav1.PartialObjectMetadata{partial(demoGV, "Cluster", "", "c1", "u1")},
			dependent: deployments, ref: ref(demoGV, "Cluster", "c1", "u1"), want: OwnerExists,
			wantRes: &scheme.Resource{GVK: schema.GroupVersionKind{Group: "demo.minik8s.io", Version: "v1", Kind: "Cluster"},
				Plural: "clusters", Singular: "cluster", Custom: true}},
		{name: "a cluster-scoped dependent naming a namespaced custom owner", discovery: echoApps(),
			dependent: clusterRoles, ref: ref(demoGV, "EchoApp", "app", "u1"), want: OwnerUnresolvable},
		{name: "group version not served: its CustomResourceDefinition is gone", discovery: apierror.New(apierror.ErrNotFound, "not found"),
			dependent: deployments, ref: ref(demoGV, "EchoApp", "app", "u1"), want: OwnerAbsent},
		{name: "the reference's version no longer served, another is", discovery: apierror.New(apierror.ErrNotFound, "not found"),
			v2:        &metav1.APIResourceList{GroupVersion: "demo.minik8s.io/v2", APIResources: echoApps().APIResources[:1]},
			owners:    []*metav1.PartialObjectMetadata{partial(demoGV, "EchoApp", "ns", "app", "u1")},
			dependent: deployments, ref: ref(demoGV, "EchoApp", "app", "u1"), want: OwnerExists,
			wantRes: &scheme.Resource{GVK: schema.GroupVersionKind{Group: "demo.minik8s.io", Version: "v2", Kind: "EchoApp"},
				Plural: "echoapps", Singular: "echoapp", Namespaced: true, DeleteCollection: true, Custom: true}},
		{name: "the reference's version no longer served, another without the kind", discovery: apierror.New(apierror.ErrNotFound, "not found"),
			v2:        &metav1.APIResourceList{GroupVersion: "demo.minik8s.io/v2", APIResources: echoApps().APIResources[2:]},
			dependent: deployments, ref: ref(demoGV, "EchoApp", "app", "u1"), want: OwnerAbsent},
		{name: "group version not served, the group list fails", discovery: apierror.New(apierror.ErrNotFound, "not found"),
			groupsErr: errors.New("connection refused"),
			dependent: deployments, ref: ref(demoGV, "EchoApp", "app", "u1"), wantErr: true},
		{name: "group version served without the kind", discovery: echoApps(),
			dependent: deployments, ref: ref(demoGV, "Other", "app", "u1"), want: OwnerUnresolvable},
		{name: "a subresource is not a kind's resource", discovery: &metav1.APIResourceList{GroupVersion: demoGV, APIResources: echoApps().APIResources[1:2]},
			dependent: deployments, ref: ref(demoGV, "EchoApp", "app", "u1"), want: OwnerUnresolvable},
		{name: "discovery fails: no answer, no deletion", discovery: apierror.New(apierror.ErrUnavailable, "try later"),
			dependent: deployments, ref: ref(demoGV, "EchoApp", "app", "u1"), wantErr: true},
		{name: "discovery forbidden", discovery: apierror.New(apierror.ErrForbidden, "no"),
			dependent: deployments, ref: ref(demoGV, "EchoApp", "app", "u1"), wantErr: true},
		{name: "an unknown kind of a built-in group is not discovered", discovery: echoApps(),
			dependent: deployments, ref: ref("apps/v1", "EchoApp", "app", "u1"), want: OwnerUnresolvable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			disc := &fakeDiscovery{answers: map[string]any{demoGV: tc.discovery}, groupsErr: tc.groupsErr}
			if tc.v2 != nil {
				disc.answers["demo.minik8s.io/v2"] = tc.v2
			}
			w := newWriters()
			for _, o := range tc.owners {
				plural := "echoapps"
				if o.Kind == "Cluster" {
					plural = "clusters"
				}
				w.of(plural).Put(o)
			}
			c := New(Config{Informers: map[string]*informer.Informer{}, Metadata: w.metadata, Discovery: disc})
			dep := partial("apps/v1", "Deployment", "ns", "child", "d1", tc.ref)
			if !tc.dependent.Namespaced {
				dep.Namespace = ""
			}
			got, err := c.ownerState(t.Context(), tc.dependent, dep, tc.ref)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ownerState = %v, %v; want an error: %v", got, err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Errorf("ownerState = %v, want %v", got, tc.want)
			}
			if tc.wantRes != nil {
				if len(w.asked) != 1 {
					t.Fatalf("the owner was looked up %d times, want once", len(w.asked))
				}
				if diff := cmp.Diff(tc.wantRes, w.asked[0], cmpopts.IgnoreFields(scheme.Resource{}, "New", "NewList")); diff != "" {
					t.Errorf("owner resource (-want +got):\n%s", diff)
				}
				if _, ok := w.asked[0].New().(interface{ UnstructuredContent() map[string]any }); !ok {
					t.Errorf("a custom resource's New gives %T, want unstructured", w.asked[0].New())
				}
			}
			if tc.wantErr && len(w.asked) > 0 {
				t.Errorf("an owner was read (%v) although its kind is unknown", w.asked[0].Plural)
			}
		})
	}
}

func TestDiscoveryCache(t *testing.T) {
	gv := schema.GroupVersion{Group: "demo.minik8s.io", Version: "v1"}
	clk := clock.NewFake(time.Unix(1000, 0))
	disc := &fakeDiscovery{answers: map[string]any{}}
	d := discovery.New(disc, clk)
	ctx := t.Context()

	// Not served yet: asked, and asked again once the answer is no longer fresh.
	if _, err := d.Resource(ctx, gv, "EchoApp"); !errors.Is(err, discovery.ErrNotServed) {
		t.Fatalf("before its definition: err %v, want discovery.ErrNotServed", err)
	}
	if _, err := d.Resource(ctx, gv, "EchoApp"); !errors.Is(err, discovery.ErrNotServed) || disc.count() != 1 {
		t.Fatalf("a fresh not-served answer: err %v after %d calls, want discovery.ErrNotServed from 1", err, disc.count())
	}
	// The definition is made: a miss on an older answer asks again and finds it.
	disc.set(demoGV, echoApps())
	clk.Step(2 * discovery.Fresh)
	if r, err := d.Resource(ctx, gv, "EchoApp"); err != nil || r == nil || r.Plural != "echoapps" {
		t.Fatalf("after its definition: %v, %v; want echoapps", r, err)
	}
	calls := disc.count()
	// Hits come from the cache until the answer expires.
	clk.Step(discovery.TTL / 2)
	if r, err := d.Resource(ctx, gv, "EchoApp"); err != nil || r == nil || disc.count() != calls {
		t.Fatalf("a cached hit: %v, %v with %d calls, want none more than %d", r, err, disc.count(), calls)
	}
	// The definition goes; the cached answer still names the kind until it expires, and the
	// owner's own read then finds nothing (absent either way).
	disc.set(demoGV, apierror.New(apierror.ErrNotFound, "gone"))
	clk.Step(discovery.TTL)
	if _, err := d.Resource(ctx, gv, "EchoApp"); !errors.Is(err, discovery.ErrNotServed) || disc.count() != calls+1 {
		t.Fatalf("after the answer expired: err %v with %d calls, want discovery.ErrNotServed from %d", err, disc.count(), calls+1)
	}
	// An error is not cached.
	disc.set(demoGV, errors.New("connection refused"))
	clk.Step(discovery.TTL + time.Second)
	for range 2 {
		if _, err := d.Resource(ctx, gv, "EchoApp"); err == nil || errors.Is(err, discovery.ErrNotServed) {
			t.Fatalf("a failed discovery: err %v, want the failure", err)
		}
	}
	if disc.count() != calls+3 {
		t.Errorf("failed discoveries made %d calls, want each one asked (%d)", disc.count(), calls+3)
	}
}

// A Deployment owned by a custom object goes as soon as the collector hears of the owner's
// deletion, not at the next resync.
func TestDependentsOfADeletedCustomOwner(t *testing.T) {
	ownerRef := metav1.OwnerReference{APIVersion: demoGV, Kind: "EchoApp", Name: "app", UID: "owner-1"}
	childMeta := partial("apps/v1", "Deployment", "ns", "child", "child-1", ownerRef)
	inf := informer.New(informer.Config{Name: "deployments", ListerWatcher: informertest.Fixed(childMeta), NoWatch: true,
		Indexers: informer.Indexers{OwnerIndex: OwnerIndexFunc}})
	w := newWriters()
	w.of("deployments").Put(childMeta)
	w.of("echoapps").Put(partial(demoGV, "EchoApp", "ns", "app", "owner-1"))
	c := New(Config{Informers: map[string]*informer.Informer{"deployments": inf}, Metadata: w.metadata,
		Discovery: &fakeDiscovery{answers: map[string]any{demoGV: echoApps()}},
		Options:   reconcile.Options{Workers: 1, Resync: time.Hour}})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(2)
	go func() { defer wg.Done(); _ = inf.Start(ctx) }()
	go func() { defer wg.Done(); _ = c.Start(ctx) }()

	// The child's first look finds its owner there.
	testwait.For(t, "the owner to be read", func() bool { return len(w.of("echoapps").CallsOf(fake.VerbGet)) > 0 })
	if _, ok := w.of("deployments").Object("ns", "child"); !ok {
		t.Fatal("the child went while its owner was there")
	}
	if err := w.of("echoapps").Delete(ctx, "ns", "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.OwnerDeleted("echoapps.demo.minik8s.io", partial(demoGV, "EchoApp", "ns", "app", "owner-1"))
	testwait.For(t, "the child to be deleted", func() bool { _, ok := w.of("deployments").Object("ns", "child"); return !ok })
	dels := w.of("deployments").CallsOf(fake.VerbDelete)
	if len(dels) != 1 || dels[0].Options.PropagationPolicy == nil || *dels[0].Options.PropagationPolicy != metav1.DeletePropagationBackground {
		t.Errorf("deletes of the child %+v, want one in the background", dels)
	}
}

// The collector reads and deletes a custom owner through the metadata client of the resource
// discovery built: the custom resource's URL, its apiVersion and kind on what it reads.
func TestMetadataOfADiscoveredResource(t *testing.T) {
	type request struct{ Method, Path, Accept string }
	var mu sync.Mutex
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, request{r.Method, r.URL.Path, r.Header.Get("Accept")})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodDelete {
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"namespace":"ns","name":"app","uid":"u1"}}`))
	}))
	t.Cleanup(srv.Close)
	cl, err := client.New(&client.Config{Server: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	res := discovery.ResourceOf(echoApps(), schema.GroupVersion{Group: "demo.minik8s.io", Version: "v1"}, "EchoApp")
	md := client.Metadata(cl, res)
	m, err := md.Get(t.Context(), "ns", "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(partial(demoGV, "EchoApp", "ns", "app", "u1"), m); diff != "" {
		t.Errorf("owner read (-want +got):\n%s", diff)
	}
	if err := md.Delete(t.Context(), "ns", "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []request{
		{http.MethodGet, "/apis/demo.minik8s.io/v1/namespaces/ns/echoapps/app", client.MetadataAccept},
		{http.MethodDelete, "/apis/demo.minik8s.io/v1/namespaces/ns/echoapps/app", ""},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(request{}, "Accept")); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if len(got) > 0 && got[0].Accept != client.MetadataAccept {
		t.Errorf("the read asked for %q, want metadata (%q)", got[0].Accept, client.MetadataAccept)
	}
}

// The sweep of custom resources handles the custom objects no informer caches as collect
// handles cached ones: an owner deleted in the foreground without dependents, and one
// orphaning its dependents, lose the finalizer (the orphan's Deployment its reference); a
// custom object whose owner is gone is deleted; one whose owner is there is kept.
func TestSweepOfCustomObjects(t *testing.T) {
	deleting := func(name, uid, finalizer string) *metav1.PartialObjectMetadata {
		m := partial(demoGV, "EchoApp", "ns", name, uid)
		m.DeletionTimestamp, m.Finalizers = &metav1.Time{Time: time.Unix(1, 0)}, []string{finalizer, "example.com/other"}
		return m
	}
	liveOwner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "live", UID: "live-1"}
	goneOwner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "gone", UID: "gone-1"}
	orphanRef := metav1.OwnerReference{APIVersion: demoGV, Kind: "EchoApp", Name: "orphaner", UID: "orphaner-1"}
	live := partial("apps/v1", "Deployment", "ns", "live", "live-1")
	child := partial("apps/v1", "Deployment", "ns", "child", "child-1", orphanRef, liveOwner)

	inf := informer.New(informer.Config{Name: "deployments", ListerWatcher: informertest.Fixed(live, child), NoWatch: true,
		Indexers: informer.Indexers{OwnerIndex: OwnerIndexFunc}})
	w := newWriters()
	w.of("deployments").Put(live)
	w.of("deployments").Put(child)
	for _, o := range []*metav1.PartialObjectMetadata{
		deleting("fg", "fg-1", metav1.FinalizerDeleteDependents),
		deleting("orphaner", "orphaner-1", metav1.FinalizerOrphanDependents),
		partial(demoGV, "EchoApp", "ns", "stray", "stray-1", goneOwner),
		partial(demoGV, "EchoApp", "ns", "kept", "kept-1", liveOwner),
		partial(demoGV, "EchoApp", "ns", "plain", "plain-1"),
	} {
		w.of("echoapps").Put(o)
	}
	var listed []string
	c := New(Config{Informers: map[string]*informer.Informer{"deployments": inf}, Metadata: w.metadata,
		Discovery: &fakeDiscovery{answers: map[string]any{demoGV: echoApps()}},
		List: func(_ context.Context, res *scheme.Resource) ([]metav1.PartialObjectMetadata, error) {
			listed = append(listed, res.StoragePlural())
			var out []metav1.PartialObjectMetadata
			for _, o := range w.of(res.Plural).Objects() {
				out = append(out, *o)
			}
			return out, nil
		}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() { defer close(done); _ = inf.Start(ctx) }()
	testwait.For(t, "the Deployments to be cached", inf.HasSynced)

	c.sweepCustom(ctx)

	// echoapps has the list verb, clusters not: only echoapps is listed.
	if diff := cmp.Diff([]string{"echoapps.demo.minik8s.io"}, listed); diff != "" {
		t.Errorf("listed resources (-want +got):\n%s", diff)
	}
	for name, want := range map[string][]string{"fg": {"example.com/other"}, "orphaner": {"example.com/other"}} {
		o, ok := w.of("echoapps").Object("ns", name)
		if !ok || !cmp.Equal(o.Finalizers, want) {
			t.Errorf("%s: finalizers %v (present %v), want %v", name, o, ok, want)
		}
	}
	if o, _ := w.of("deployments").Object("ns", "child"); len(o.OwnerReferences) != 1 || o.OwnerReferences[0].UID != "live-1" {
		t.Errorf("the orphaned Deployment's owner references %v, want only the live owner", o.OwnerReferences)
	}
	if _, ok := w.of("echoapps").Object("ns", "stray"); ok {
		t.Error("the EchoApp whose owner is gone was kept")
	}
	for _, name := range []string{"kept", "plain"} {
		if _, ok := w.of("echoapps").Object("ns", name); !ok {
			t.Errorf("the EchoApp %s was deleted", name)
		}
	}
	if n := len(w.of("echoapps").CallsOf(fake.VerbDelete)); n != 1 {
		t.Errorf("%d EchoApps deleted, want 1", n)
	}
}
