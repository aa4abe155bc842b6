package validation

import (
	"testing"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

func TestWorkflow(t *testing.T) {
	type S = serverlessv1.State
	type R = serverlessv1.ChoiceRule
	task, choice, pass, wait := serverlessv1.StateTask, serverlessv1.StateChoice, serverlessv1.StatePass, serverlessv1.StateWait
	succeed, fail, par, mp := serverlessv1.StateSucceed, serverlessv1.StateFail, serverlessv1.StateParallel, serverlessv1.StateMap
	set := func(name string, s S) func(*serverlessv1.Workflow) {
		return func(w *serverlessv1.Workflow) { w.Spec.States[name] = s }
	}
	branch := func(start string, states map[string]S) serverlessv1.Branch {
		return serverlessv1.Branch{StartAt: start, States: states}
	}
	json := func(s string) *serverlessv1.JSON { return serverlessv1.NewJSON([]byte(s)) }
	n1 := R{Variable: "$.n", NumericEquals: ptr(1.0)}
	runCreate(t, Workflow, nil, newWorkflow, []createCase[*serverlessv1.Workflow]{
		{name: "valid"},
		{name: "every state type", mutate: func(w *serverlessv1.Workflow) {
			w.Spec.StartAt = "p"
			w.Spec.TimeoutSeconds = ptr(int32(60))
			w.Spec.States = map[string]S{
				"p": {Type: pass, Result: json(`{"n":[1,2]}`), ResultPath: "$.r", Next: "w"},
				"w": {Type: wait, Seconds: ptr(int32(1)), Next: "t"},
				"t": {Type: task, Function: "f", InputPath: "$.r", Parameters: json(`{"x.$":"$.n[0]","k":{"y.$":"$"}}`), ResultPath: "$.out", OutputPath: "$.out",
					TimeoutSeconds: ptr(int32(5)),
					Retry:          []serverlessv1.Retry{{ErrorEquals: []string{"ValueError"}, MaxAttempts: ptr(int32(2)), BackoffRate: ptr(1.5)}, {ErrorEquals: []string{"States.ALL"}}},
					Catch:          []serverlessv1.Catch{{ErrorEquals: []string{"States.ALL"}, Next: "bad", ResultPath: "$.error"}}, Next: "c"},
				"c": {Type: choice, Choices: []R{
					{And: []R{{Variable: "$.n", NumericGreaterThanEquals: ptr(1.0)}, {Not: &R{Variable: "$.s", IsPresent: ptr(true)}}}, Next: "par"},
					{Or: []R{{Variable: "$.s", StringLessThan: ptr("m")}, {Variable: "$.b", BooleanEquals: ptr(true)}}, Next: "map"},
				}, Default: "ok"},
				"par": {Type: par, Branches: []serverlessv1.Branch{
					branch("a", map[string]S{"a": {Type: task, Function: "f", End: true}}),
					branch("b", map[string]S{"b": {Type: pass, End: true}}),
				}, Next: "ok"},
				"map": {Type: mp, ItemsPath: "$.items", MaxConcurrency: 2, Iterator: &serverlessv1.Branch{StartAt: "i", States: map[string]S{"i": {Type: task, Function: "f", End: true}}}, End: true},
				"ok":  {Type: succeed, OutputPath: "$.x"},
				"bad": {Type: fail, Error: "Broken", Cause: "the task failed"},
			}
		}},
		{name: "startAt required", mutate: func(w *serverlessv1.Workflow) { w.Spec.StartAt = "" }, want: []problem{req("spec.startAt")}},
		{name: "startAt unknown", mutate: func(w *serverlessv1.Workflow) { w.Spec.StartAt = "nope" }, want: []problem{nf("spec.startAt")}},
		{name: "no states", mutate: func(w *serverlessv1.Workflow) { w.Spec.States = nil }, want: []problem{req("spec.states")}},
		{name: "timeout", mutate: func(w *serverlessv1.Workflow) { w.Spec.TimeoutSeconds = ptr(int32(0)) }, want: []problem{inv("spec.timeoutSeconds")}},
		{name: "next unknown", mutate: set("double", S{Type: task, Function: "double", Next: "gone"}),
			want: []problem{nf("spec.states[double].next")}},
		{name: "choice target unknown", mutate: set("check", S{Type: choice, Choices: []R{{Variable: "$.n", NumericEquals: ptr(1.0), Next: "gone"}}}),
			want: []problem{nf("spec.states[check].choices[0].next")}},
		{name: "default unknown", mutate: set("check", S{Type: choice, Choices: []R{{Variable: "$.n", NumericEquals: ptr(1.0), Next: "done"}}, Default: "gone"}),
			want: []problem{nf("spec.states[check].default")}},
		{name: "catch target unknown", mutate: set("double", S{Type: task, Function: "double", Next: "check",
			Catch: []serverlessv1.Catch{{ErrorEquals: []string{"States.ALL"}, Next: "gone"}}}),
			want: []problem{nf("spec.states[double].catch[0].next")}},
		{name: "task needs function", mutate: set("double", S{Type: task, Next: "check"}), want: []problem{req("spec.states[double].function")}},
		{name: "task function name", mutate: set("double", S{Type: task, Function: "Double_It", Next: "check"}), want: []problem{inv("spec.states[double].function")}},
		{name: "task needs next or end", mutate: set("double", S{Type: task, Function: "double"}), want: []problem{req("spec.states[double].next")}},
		{name: "next and end", mutate: set("double", S{Type: task, Function: "double", Next: "check", End: true}), want: []problem{inv("spec.states[double].end")}},
		{name: "unknown type", mutate: set("done", S{Type: "Sleep"}), want: []problem{nsup("spec.states[done].type")}},
		{name: "type required", mutate: set("done", S{}), want: []problem{req("spec.states[done].type")}},
		{name: "next on terminal", mutate: set("done", S{Type: succeed, Next: "double"}), want: []problem{forb("spec.states[done].next")}},
		{name: "fields of other types", mutate: set("double", S{Type: task, Function: "double", Next: "check", Default: "done", Seconds: ptr(int32(1)),
			Result: json(`1`), Error: "E", Branches: []serverlessv1.Branch{branch("a", nil)}}),
			want: []problem{forb("spec.states[double].default"), forb("spec.states[double].result"), forb("spec.states[double].seconds"),
				forb("spec.states[double].error"), forb("spec.states[double].branches")}},
		{name: "fail takes no paths", mutate: set("done", S{Type: fail, InputPath: "$.a", ResultPath: "$.b"}),
			want: []problem{forb("spec.states[done].inputPath"), forb("spec.states[done].resultPath")}},
		{name: "choice takes no retry", mutate: set("check", S{Type: choice, Choices: []R{{Variable: "$.n", NumericEquals: ptr(1.0), Next: "done"}},
			Retry: []serverlessv1.Retry{{ErrorEquals: []string{"States.ALL"}}}}),
			want: []problem{forb("spec.states[check].retry")}},
		{name: "two comparisons", mutate: set("check", S{Type: choice, Choices: []R{{Variable: "$.n", NumericEquals: ptr(1.0), StringEquals: ptr("1"), Next: "done"}}}),
			want: []problem{inv("spec.states[check].choices[0]")}},
		{name: "no comparison", mutate: set("check", S{Type: choice, Choices: []R{{Variable: "$.n", Next: "done"}}}),
			want: []problem{inv("spec.states[check].choices[0]")}},
		{name: "rule without next", mutate: set("check", S{Type: choice, Choices: []R{n1}, Default: "done"}),
			want: []problem{req("spec.states[check].choices[0].next")}},
		{name: "nested rules", mutate: set("check", S{Type: choice, Choices: []R{
			{And: []R{{Variable: "n", NumericEquals: ptr(1.0)}, {NumericEquals: ptr(1.0)}, {Variable: "$.a", IsNull: ptr(true), Next: "done"}}, Next: "done"},
			{Or: []R{}, Next: "done"},
			{Not: &R{Not: &R{Variable: "$.x..y", IsPresent: ptr(false)}}, Next: "done"},
			{Variable: "$.n", And: []R{n1}, Next: "done"},
		}}),
			want: []problem{inv("spec.states[check].choices[0].and[0].variable"), req("spec.states[check].choices[0].and[1].variable"),
				forb("spec.states[check].choices[0].and[2].next"), req("spec.states[check].choices[1].or"),
				inv("spec.states[check].choices[2].not.not.variable"), forb("spec.states[check].choices[3].variable")}},
		{name: "bad paths", mutate: set("double", S{Type: task, Function: "double", Next: "check", InputPath: "a", ResultPath: "$.", OutputPath: "$[x]",
			Parameters: json(`{"a.$": "b", "c": {"d.$": 3}, "e": "f"}`)}),
			want: []problem{inv("spec.states[double].inputPath"), inv("spec.states[double].resultPath"), inv("spec.states[double].outputPath"),
				inv("spec.states[double].parameters[a.$]"), inv("spec.states[double].parameters[c][d.$]")}},
		{name: "parameters not an object", mutate: set("double", S{Type: task, Function: "double", Next: "check", Parameters: json(`[1]`)}),
			want: []problem{inv("spec.states[double].parameters")}},
		{name: "bad retry and catch", mutate: set("double", S{Type: task, Function: "double", Next: "check",
			Retry: []serverlessv1.Retry{
				{ErrorEquals: []string{"States.ALL"}},
				{ErrorEquals: nil, IntervalSeconds: ptr(int32(0)), MaxAttempts: ptr(int32(-1)), BackoffRate: ptr(0.5)},
				{ErrorEquals: []string{"States.Nope", "", "States.ALL"}},
			},
			Catch: []serverlessv1.Catch{{ErrorEquals: []string{"ValueError"}, ResultPath: "x"}}}),
			want: []problem{inv("spec.states[double].retry[0].errorEquals[0]"),
				req("spec.states[double].retry[1].errorEquals"), inv("spec.states[double].retry[1].intervalSeconds"),
				inv("spec.states[double].retry[1].maxAttempts"), inv("spec.states[double].retry[1].backoffRate"),
				nsup("spec.states[double].retry[2].errorEquals[0]"), inv("spec.states[double].retry[2].errorEquals[1]"), inv("spec.states[double].retry[2].errorEquals[2]"),
				req("spec.states[double].catch[0].next"), inv("spec.states[double].catch[0].resultPath")}},
		{name: "wait needs one duration", mutate: set("double", S{Type: wait, Seconds: ptr(int32(1)), SecondsPath: "$.s", Next: "check"}),
			want: []problem{inv("spec.states[double]")}},
		{name: "wait timestamp", mutate: set("double", S{Type: wait, Timestamp: "tomorrow", Next: "check"}),
			want: []problem{inv("spec.states[double].timestamp")}},
		{name: "parallel branches checked with their own paths", mutate: set("double", S{Type: par, Next: "check", Branches: []serverlessv1.Branch{
			branch("a", map[string]S{"a": {Type: task, Function: "f", Next: "check"}}),
			branch("x", map[string]S{"a": {Type: "Task", Function: "f", End: true}}),
		}}),
			want: []problem{nf("spec.states[double].branches[0].states[a].next"), nf("spec.states[double].branches[1].startAt")}},
		{name: "parallel needs branches", mutate: set("double", S{Type: par, Next: "check"}), want: []problem{req("spec.states[double].branches")}},
		{name: "map iterator checked", mutate: set("double", S{Type: mp, Next: "check", ItemsPath: "$.items", MaxConcurrency: -1,
			Iterator: &serverlessv1.Branch{StartAt: "i", States: map[string]S{"i": {Type: pass, Next: "j"}, "j": {Type: pass, Next: "i"}}}}),
			want: []problem{inv("spec.states[double].iterator.states[i]"), inv("spec.states[double].iterator.states[j]"), inv("spec.states[double].maxConcurrency")}},
		{name: "map needs iterator", mutate: set("double", S{Type: mp, Next: "check"}), want: []problem{req("spec.states[double].iterator")}},
		{name: "unreachable state", mutate: set("lost", S{Type: succeed}), want: []problem{inv("spec.states[lost]")}},
		{name: "a loop with no way out", mutate: func(w *serverlessv1.Workflow) {
			w.Spec.StartAt = "a"
			w.Spec.States = map[string]S{
				"a":    {Type: choice, Choices: []R{{Variable: "$.n", NumericEquals: ptr(1.0), Next: "done"}}, Default: "b"},
				"b":    {Type: pass, Next: "c"},
				"c":    {Type: wait, Seconds: ptr(int32(1)), Next: "b"},
				"done": {Type: succeed},
			}
		}, want: []problem{inv("spec.states[b]"), inv("spec.states[c]")}},
		{name: "a loop left by a catch ends", mutate: func(w *serverlessv1.Workflow) {
			w.Spec.StartAt = "a"
			w.Spec.States = map[string]S{
				"a":    {Type: task, Function: "f", Next: "a", Catch: []serverlessv1.Catch{{ErrorEquals: []string{"States.ALL"}, Next: "done"}}},
				"done": {Type: succeed},
			}
		}},
		{name: "state names", mutate: set("a[0]", S{Type: succeed}), want: []problem{inv("spec.states[a[0]]")}},
	})
}

func TestWorkflowExecution(t *testing.T) {
	fixture := func() *serverlessv1.WorkflowExecution {
		return &serverlessv1.WorkflowExecution{ObjectMeta: meta("flow-abc"), Spec: serverlessv1.WorkflowExecutionSpec{
			Workflow: "flow", Input: serverlessv1.NewJSON([]byte(`{"n":1}`))}}
	}
	runCreate(t, WorkflowExecution, nil, fixture, []createCase[*serverlessv1.WorkflowExecution]{
		{name: "valid"},
		{name: "no input", mutate: func(e *serverlessv1.WorkflowExecution) { e.Spec.Input = nil }},
		{name: "workflow required", mutate: func(e *serverlessv1.WorkflowExecution) { e.Spec.Workflow = "" }, want: []problem{req("spec.workflow")}},
		{name: "workflow name", mutate: func(e *serverlessv1.WorkflowExecution) { e.Spec.Workflow = "Flow!" }, want: []problem{inv("spec.workflow")}},
		{name: "phase", mutate: func(e *serverlessv1.WorkflowExecution) { e.Status.Phase = "Done" }, want: []problem{nsup("status.phase")}},
	})
	runUpdate(t, WorkflowExecution, nil, fixture, []updateCase[*serverlessv1.WorkflowExecution]{
		{name: "status", mutate: func(e *serverlessv1.WorkflowExecution) {
			e.Status.Phase = serverlessv1.ExecutionSucceeded
			e.Status.Output = serverlessv1.NewJSON([]byte(`2`))
		}},
		{name: "spec is immutable", mutate: func(e *serverlessv1.WorkflowExecution) {
			e.Spec.Workflow = "other"
			e.Spec.Input = serverlessv1.NewJSON([]byte(`{"n":2}`))
		}, want: []problem{forb("spec.workflow"), forb("spec.input")}},
	})
}
