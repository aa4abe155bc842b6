package validation

import (
	"testing"

	"minik8s.io/apiserver/internal/defaults"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

func TestFunction(t *testing.T) {
	runCreate(t, Function, defaults.Function, newFunction, []createCase[*serverlessv1.Function]{
		{name: "valid"},
		{name: "package handler", mutate: func(f *serverlessv1.Function) {
			f.Spec.Handler = "app.api.handle"
			f.Spec.Source = map[string]string{"app/api.py": "def handle(e): return e"}
		}},
		{name: "handler required", mutate: func(f *serverlessv1.Function) { f.Spec.Handler = "" }, want: []problem{req("spec.handler")}},
		{name: "handler form", mutate: func(f *serverlessv1.Function) { f.Spec.Handler = "handle" }, want: []problem{inv("spec.handler")}},
		{name: "handler identifiers", mutate: func(f *serverlessv1.Function) { f.Spec.Handler = "main.2x" }, want: []problem{inv("spec.handler")}},
		{name: "module file missing", mutate: func(f *serverlessv1.Function) { f.Spec.Handler = "app.handle" }, want: []problem{inv("spec.handler")}},
		{name: "source required", mutate: func(f *serverlessv1.Function) { f.Spec.Source = nil }, want: []problem{req("spec.source")}},
		{name: "escaping file name", mutate: func(f *serverlessv1.Function) { f.Spec.Source["../x.py"] = "" }, want: []problem{inv("spec.source[../x.py]")}},
		{name: "runtime", mutate: func(f *serverlessv1.Function) { f.Spec.Runtime = "node20" }, want: []problem{nsup("spec.runtime")}},
		{name: "max below min", mutate: func(f *serverlessv1.Function) {
			f.Spec.Scale.MinReplicas = ptr(int32(3))
			f.Spec.Scale.MaxReplicas = ptr(int32(2))
		}, want: []problem{inv("spec.scale.maxReplicas")}},
		{name: "target rate", mutate: func(f *serverlessv1.Function) { f.Spec.Scale.TargetRequestsPerSecond = ptr(int32(0)) },
			want: []problem{inv("spec.scale.targetRequestsPerSecond")}},
		{name: "target concurrency", mutate: func(f *serverlessv1.Function) { f.Spec.Scale.TargetConcurrency = ptr(int32(0)) },
			want: []problem{inv("spec.scale.targetConcurrency")}},
		{name: "stable window", mutate: func(f *serverlessv1.Function) { f.Spec.Scale.StableWindowSeconds = ptr(int32(2)) },
			want: []problem{inv("spec.scale.stableWindowSeconds")}},
		{name: "timeout", mutate: func(f *serverlessv1.Function) { f.Spec.TimeoutSeconds = ptr(int32(0)) }, want: []problem{inv("spec.timeoutSeconds")}},
		{name: "local path never stored", mutate: func(f *serverlessv1.Function) { f.Spec.SourcePath = "./fn" }, want: []problem{forb("spec.sourcePath")}},
		{name: "schedules", mutate: func(f *serverlessv1.Function) {
			f.Spec.Schedules = []serverlessv1.FunctionSchedule{{Name: "tick", Schedule: "@every 30s", Input: `{"n": 1}`}, {Name: "nightly", Schedule: "0 3 * * *"}}
		}},
		{name: "bad schedule", mutate: func(f *serverlessv1.Function) {
			f.Spec.Schedules = []serverlessv1.FunctionSchedule{{Name: "tick", Schedule: "every minute", Input: "{"}, {Name: "tick", Schedule: "* * * * *"}}
		}, want: []problem{inv("spec.schedules[0].schedule"), inv("spec.schedules[0].input"), dup("spec.schedules[1].name")}},
	})
}
