package function

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

func ptr[T any](v T) *T { return &v }

func fn() *serverlessv1.Function {
	return &serverlessv1.Function{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "add", UID: "u1", Generation: 3},
		Spec:       serverlessv1.FunctionSpec{Handler: "main.handle", Source: map[string]string{"main.py": "def handle(e): return e"}},
	}
}

func TestSourceHash(t *testing.T) {
	base := fn().Spec
	h := SourceHash(&base)
	if len(h) != 16 {
		t.Fatalf("hash %q: want 16 hex digits", h)
	}
	explicit := base
	explicit.Runtime = "python3"
	if got := SourceHash(&explicit); got != h {
		t.Errorf("runtime python3 spelled out changed the hash: %s != %s", got, h)
	}
	same := base
	same.Scale.MaxReplicas = ptr(int32(3))
	same.Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	same.Schedules = []serverlessv1.FunctionSchedule{{Name: "s", Schedule: "@every 1m"}}
	if got := SourceHash(&same); got != h {
		t.Errorf("scale, env and schedules changed the hash")
	}
	for name, mutate := range map[string]func(*serverlessv1.FunctionSpec){
		"handler": func(s *serverlessv1.FunctionSpec) { s.Handler = "main.other" },
		"source":  func(s *serverlessv1.FunctionSpec) { s.Source = map[string]string{"main.py": "def handle(e): return 1"} },
		"file name": func(s *serverlessv1.FunctionSpec) {
			s.Source = map[string]string{"main2.py": "def handle(e): return e"}
		},
		"extra file": func(s *serverlessv1.FunctionSpec) {
			s.Source = map[string]string{"main.py": "def handle(e): return e", "x.py": ""}
		},
		"requirements": func(s *serverlessv1.FunctionSpec) { s.Requirements = "requests\n" },
		"runtime":      func(s *serverlessv1.FunctionSpec) { s.Runtime = "python4" },
		// Boundaries between fields matter: the same bytes split differently.
		"boundary": func(s *serverlessv1.FunctionSpec) {
			s.Source = map[string]string{"main.pydef handle(e): ": "return e"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := fn().Spec
			mutate(&s)
			if SourceHash(&s) == h {
				t.Errorf("changing the %s kept the hash", name)
			}
		})
	}
}

func TestImageNames(t *testing.T) {
	img := ImageName("team-a", "thumb.v2", 7)
	if img != "minik8s-fn/team-a.thumb.v2:v7" {
		t.Fatalf("ImageName = %q", img)
	}
	for _, tc := range []struct {
		in       string
		ns, name string
		v        int64
		ok       bool
	}{
		{img, "team-a", "thumb.v2", 7, true},
		{"docker.io/minik8s-fn/default.add:v1", "default", "add", 1, true},
		{"minik8s-fn/default.add:latest", "", "", 0, false},
		{"minik8s-fn/default.add:v0", "", "", 0, false},
		{"minik8s/debian:12", "", "", 0, false},
		{"minik8s-fn/nodot:v1", "", "", 0, false},
	} {
		ns, name, v, ok := ParseImage(tc.in)
		if ns != tc.ns || name != tc.name || v != tc.v || ok != tc.ok {
			t.Errorf("ParseImage(%q) = %q %q %d %v, want %q %q %d %v", tc.in, ns, name, v, ok, tc.ns, tc.name, tc.v, tc.ok)
		}
	}
}

func TestDeployment(t *testing.T) {
	f := fn()
	f.Spec.Env = []corev1.EnvVar{{Name: "GREETING", Value: "hi"}}
	f.Spec.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}
	d := Deployment(f, ImageName("default", "add", 2), 2, 0)

	ref := metav1.GetControllerOf(d)
	if ref == nil || ref.UID != "u1" || ref.Kind != "Function" || ref.APIVersion != "serverless.minik8s.io/v1" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("owner reference %+v", ref)
	}
	if diff := cmp.Diff(map[string]string{serverlessv1.LabelFunction: "add"}, d.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{serverlessv1.LabelFunction: "add", serverlessv1.LabelVersion: "2"}, d.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	if *d.Spec.Replicas != 0 {
		t.Errorf("replicas %d, want 0", *d.Spec.Replicas)
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable.IntValue() != 0 || ru.MaxSurge.IntValue() < 1 {
		t.Errorf("strategy %+v: want maxUnavailable 0 and a surge", d.Spec.Strategy)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "minik8s-fn/default.add:v2" || c.Ports[0].ContainerPort != serverlessv1.RuntimePort {
		t.Errorf("container %+v", c)
	}
	if diff := cmp.Diff([]corev1.EnvVar{{Name: serverlessv1.EnvHandler, Value: "main.handle"}, {Name: "GREETING", Value: "hi"}}, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.PeriodSeconds != 1 {
		t.Errorf("readiness probe %+v", p)
	}
	if c.Resources.Limits.Memory().String() != "128Mi" {
		t.Errorf("resources %+v", c.Resources)
	}

	// The stored Deployment has the autoscaler's replicas and defaults the apiserver filled
	// in: no update while the rendering is the same, an update keeping replicas otherwise.
	stored := d.DeepCopy()
	stored.Spec.Replicas = ptr(int32(4))
	stored.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if _, ok := NeedsUpdate(stored, Deployment(f, ImageName("default", "add", 2), 2, 0)); ok {
		t.Errorf("same rendering: update wanted")
	}
	upd, ok := NeedsUpdate(stored, Deployment(f, ImageName("default", "add", 3), 3, 0))
	if !ok {
		t.Fatalf("new image: no update")
	}
	if *upd.Spec.Replicas != 4 || upd.Spec.Template.Spec.Containers[0].Image != "minik8s-fn/default.add:v3" || DeployedVersion(upd) != 3 {
		t.Errorf("update: replicas %d image %s version %d", *upd.Spec.Replicas, upd.Spec.Template.Spec.Containers[0].Image, DeployedVersion(upd))
	}
	f.Spec.Env[0].Value = "hello"
	if _, ok := NeedsUpdate(stored, Deployment(f, ImageName("default", "add", 2), 2, 0)); !ok {
		t.Errorf("changed env: no update")
	}
}

func TestInitialReplicas(t *testing.T) {
	f := fn()
	if n := InitialReplicas(f); n != 0 {
		t.Errorf("no floor: %d", n)
	}
	f.Spec.Scale.MinReplicas = ptr(int32(2))
	if n := InitialReplicas(f); n != 2 {
		t.Errorf("floor 2: %d", n)
	}
	f.Status.DesiredReplicas = 5
	if n := InitialReplicas(f); n != 5 {
		t.Errorf("autoscaler asks 5: %d", n)
	}
}

func TestBuildLifecycle(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := fn()
	st := &f.Status

	v := StartBuild(st, "h1", now)
	if v != 1 || st.Version != 1 || st.SourceHash != "h1" || st.Build.Phase != BuildRunning {
		t.Fatalf("first build: %d %+v", v, st)
	}
	Observe(f, st, nil, now)
	if st.Phase != PhaseBuilding || cond(st, ConditionBuilt).Reason != "Building" || cond(st, ConditionReady).Status != metav1.ConditionFalse {
		t.Errorf("building: %s %+v", st.Phase, st.Conditions)
	}
	if FinishBuild(st, BuildOutcome{Version: 1, SourceHash: "other", Image: "x"}, now) {
		t.Errorf("an outcome of another source was taken")
	}
	if !FinishBuild(st, BuildOutcome{Version: 1, SourceHash: "h1", Image: ImageName("default", "add", 1), Log: "ok"}, now) {
		t.Fatalf("outcome not taken")
	}
	if st.Image != "minik8s-fn/default.add:v1" || st.Build.Phase != BuildSucceeded {
		t.Errorf("succeeded: %+v", st)
	}
	dep := Deployment(f, st.Image, 1, 0)
	dep.Generation, dep.Status.ObservedGeneration = 1, 1
	Observe(f, st, dep, now)
	if st.Phase != PhaseReady || cond(st, ConditionReady).Status != metav1.ConditionTrue || st.ObservedGeneration != 3 {
		t.Errorf("ready: %s %+v", st.Phase, st.Conditions)
	}
	readySince := cond(st, ConditionReady).LastTransitionTime

	// A new source whose build fails: version 2 is Failed, version 1 keeps serving.
	later := now.Add(time.Minute)
	if v := StartBuild(st, "h2", later); v != 2 {
		t.Fatalf("second build version %d", v)
	}
	FinishBuild(st, BuildOutcome{Version: 2, SourceHash: "h2", Image: ImageName("default", "add", 2), Log: strings.Repeat("x", 5000),
		Err: errors.New("pip: no matching distribution for nosuchpkg")}, later)
	dep.Status.Replicas, dep.Status.ReadyReplicas, dep.Status.UpdatedReplicas = 1, 1, 1
	dep.Spec.Replicas = ptr(int32(1))
	Observe(f, st, dep, later)
	if st.Phase != PhaseFailed || st.Image != "minik8s-fn/default.add:v1" || st.Version != 2 {
		t.Errorf("failed build: phase %s image %s version %d", st.Phase, st.Image, st.Version)
	}
	if c := cond(st, ConditionBuilt); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "nosuchpkg") {
		t.Errorf("built condition %+v", c)
	}
	if c := cond(st, ConditionReady); c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Equal(&readySince) {
		t.Errorf("ready condition %+v: want still true since %v", c, readySince)
	}
	if len(st.Build.Log) > 2100 || st.ReadyReplicas != 1 {
		t.Errorf("log %d bytes, ready %d", len(st.Build.Log), st.ReadyReplicas)
	}
	// The next source after a failed build is version 3.
	if v := StartBuild(st, "h3", later); v != 3 {
		t.Errorf("third build version %d", v)
	}
}

func TestStatusPatch(t *testing.T) {
	old := &serverlessv1.FunctionStatus{Phase: PhaseReady, ReadyReplicas: 2, DesiredReplicas: 2}
	same := (&serverlessv1.Function{Status: *old}).DeepCopy().Status
	pSame := &same
	pSame.DesiredReplicas = 9 // the autoscaler's field
	if _, changed := StatusPatch("5", old, pSame); changed {
		t.Errorf("a change of the autoscaler's field made a patch")
	}
	n := &(&serverlessv1.Function{Status: *old}).DeepCopy().Status
	n.ReadyReplicas = 0
	p, changed := StatusPatch("5", old, n)
	if !changed {
		t.Fatal("no patch")
	}
	for _, want := range []string{`"readyReplicas":0`, `"resourceVersion":"5"`, `"build":null`} {
		if !strings.Contains(string(p), want) {
			t.Errorf("patch %s lacks %s", p, want)
		}
	}
	if strings.Contains(string(p), "desiredReplicas") || strings.Contains(string(p), "lastCallTime") {
		t.Errorf("patch %s writes the autoscaler's fields", p)
	}
}

func TestRolledOut(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(2))}}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2}
	if RolledOut(d) {
		t.Error("unobserved generation counted as rolled out")
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 2}
	if RolledOut(d) {
		t.Error("an old pod left counted as rolled out")
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2}
	if !RolledOut(d) {
		t.Error("rolled out not seen")
	}
	d.Spec.Replicas = ptr(int32(0))
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2}
	if !RolledOut(d) {
		t.Error("scaled to zero not rolled out")
	}
}

func TestScheduleStatuses(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := fn()
	f.Spec.Schedules = []serverlessv1.FunctionSchedule{{Name: "a", Schedule: "@every 1m"}, {Name: "b", Schedule: "@every 1m"}}
	f.Status.Schedules = []serverlessv1.FunctionScheduleStatus{
		{Name: "b", LastScheduleTime: &metav1.Time{Time: t0}, LastResult: "Succeeded"},
		{Name: "gone", LastScheduleTime: &metav1.Time{Time: t0}, LastResult: "Succeeded"},
	}
	// What this process wrote last is newer than the cache for b.
	written := []serverlessv1.FunctionScheduleStatus{{Name: "b", LastScheduleTime: &metav1.Time{Time: t0.Add(time.Minute)}, LastResult: "boom"}}
	got := ScheduleStatuses(f, written, "a", t0.Add(2*time.Minute), "Succeeded")
	want := []serverlessv1.FunctionScheduleStatus{
		{Name: "a", LastScheduleTime: &metav1.Time{Time: t0.Add(2 * time.Minute)}, LastResult: "Succeeded"},
		{Name: "b", LastScheduleTime: &metav1.Time{Time: t0.Add(time.Minute)}, LastResult: "boom"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schedules (-want +got):\n%s", diff)
	}
	if _, err := CronParser.Parse("*/5 * * * *"); err != nil {
		t.Error(err)
	}
	if _, err := CronParser.Parse("*/5 * * * * *"); err == nil {
		t.Error("a seconds field was accepted")
	}
}

func cond(st *serverlessv1.FunctionStatus, typ string) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}
