package validation

import (
	"testing"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

func TestFunction(t *testing.T) {
	runCreate(t, newFunction, []createCase[*serverlessv1.Function]{
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

func TestWorkflow(t *testing.T) {
	set := func(name string, s serverlessv1.State) func(*serverlessv1.Workflow) {
		return func(w *serverlessv1.Workflow) { w.Spec.States[name] = s }
	}
	runCreate(t, newWorkflow, []createCase[*serverlessv1.Workflow]{
		{name: "valid"},
		{name: "startAt required", mutate: func(w *serverlessv1.Workflow) { w.Spec.StartAt = "" }, want: []problem{req("spec.startAt")}},
		{name: "startAt unknown", mutate: func(w *serverlessv1.Workflow) { w.Spec.StartAt = "nope" }, want: []problem{nf("spec.startAt")}},
		{name: "next unknown", mutate: set("double", serverlessv1.State{Type: serverlessv1.StateTask, Function: "double", Next: "gone"}),
			want: []problem{nf("spec.states[double].next")}},
		{name: "choice target unknown", mutate: set("check", serverlessv1.State{Type: serverlessv1.StateChoice,
			Choices: []serverlessv1.ChoiceRule{{Variable: "$.n", NumericEquals: ptr(1.0), Next: "gone"}}}),
			want: []problem{nf("spec.states[check].choices[0].next")}},
		{name: "default unknown", mutate: set("check", serverlessv1.State{Type: serverlessv1.StateChoice,
			Choices: []serverlessv1.ChoiceRule{{Variable: "$.n", NumericEquals: ptr(1.0), Next: "done"}}, Default: "gone"}),
			want: []problem{nf("spec.states[check].default")}},
		{name: "task needs function", mutate: set("double", serverlessv1.State{Type: serverlessv1.StateTask, Next: "check"}),
			want: []problem{req("spec.states[double].function")}},
		{name: "task needs next or end", mutate: set("double", serverlessv1.State{Type: serverlessv1.StateTask, Function: "double"}),
			want: []problem{req("spec.states[double].next")}},
		{name: "type", mutate: set("done", serverlessv1.State{Type: "Wait"}), want: []problem{nsup("spec.states[done].type")}},
		{name: "next on terminal", mutate: set("done", serverlessv1.State{Type: serverlessv1.StateSucceed, Next: "double"}),
			want: []problem{forb("spec.states[done].next")}},
		{name: "two comparisons", mutate: set("check", serverlessv1.State{Type: serverlessv1.StateChoice,
			Choices: []serverlessv1.ChoiceRule{{Variable: "$.n", NumericEquals: ptr(1.0), StringEquals: ptr("1"), Next: "done"}}}),
			want: []problem{inv("spec.states[check].choices[0]")}},
		{name: "no terminal reachable", mutate: func(w *serverlessv1.Workflow) {
			w.Spec.States["check"] = serverlessv1.State{Type: serverlessv1.StateChoice,
				Choices: []serverlessv1.ChoiceRule{{Variable: "$.n", NumericEquals: ptr(1.0), Next: "double"}}}
		}, want: []problem{inv("spec.states")}},
	})
}
