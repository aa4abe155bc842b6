package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"minik8s.io/serverless/internal/gateway"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/workqueue/clock"
)

// fakeFunctions answers calls from Go functions of the decoded input, and counts calls.
type fakeFunctions struct {
	mu    sync.Mutex
	fns   map[string]func(ctx context.Context, in map[string]any) (any, error)
	calls map[string]int
}

func (f *fakeFunctions) Invoke(ctx context.Context, ns, name string, input []byte) ([]byte, error) {
	if ns != "ns1" {
		return nil, fmt.Errorf("called in namespace %q", ns)
	}
	f.mu.Lock()
	fn, ok := f.fns[name]
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[name]++
	f.mu.Unlock()
	if !ok {
		return nil, &gateway.CallError{Status: http.StatusNotFound, Message: "function ns1/" + name + " not found"}
	}
	var in map[string]any
	if err := json.Unmarshal(input, &in); err != nil {
		in = map[string]any{"_raw": string(input)}
	}
	out, err := fn(ctx, in)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func (f *fakeFunctions) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func num(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case json.Number:
		f, _ := n.Float64()
		return f
	}
	return 0
}

// arithmetic are the small functions the tests' workflows call.
func arithmetic() *fakeFunctions {
	return &fakeFunctions{fns: map[string]func(context.Context, map[string]any) (any, error){
		"double": func(_ context.Context, in map[string]any) (any, error) {
			return map[string]any{"n": num(in["n"]) * 2}, nil
		},
		"inc": func(_ context.Context, in map[string]any) (any, error) {
			return map[string]any{"n": num(in["n"]) + 1}, nil
		},
		"echo": func(_ context.Context, in map[string]any) (any, error) { return in, nil },
		"boom": func(context.Context, map[string]any) (any, error) {
			return nil, &gateway.CallError{Status: http.StatusBadGateway, Message: "ValueError: n must be positive",
				Traceback: "Traceback (most recent call last):\n  File \"main.py\", line 3, in handle\nValueError: n must be positive"}
		},
		"hang": func(ctx context.Context, _ map[string]any) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}}
}

// spec reads a workflow spec written as YAML, as users write them.
func spec(t *testing.T, y string) *serverlessv1.WorkflowSpec {
	t.Helper()
	var s serverlessv1.WorkflowSpec
	if err := yaml.UnmarshalStrict([]byte(y), &s); err != nil {
		t.Fatalf("bad spec: %v\n%s", err, y)
	}
	return &s
}

// execute runs s on input with a fake clock that a helper moves on by 100 ms every real
// millisecond while the execution runs, so waits, retries and timeouts pass quickly.
func execute(t *testing.T, fns Invoker, s *serverlessv1.WorkflowSpec, input string) (Outcome, []serverlessv1.WorkflowStep, time.Duration) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clk.Now()
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				clk.Step(100 * time.Millisecond)
			}
		}
	}()
	var steps []serverlessv1.WorkflowStep
	in := &Interpreter{Invoker: fns, Clock: clk}
	out := in.Run(t.Context(), "ns1", s, []byte(input), func(st serverlessv1.WorkflowStep) { steps = append(steps, st) })
	close(done)
	return out, steps, clk.Since(start)
}

func mustSucceed(t *testing.T, out Outcome, want string) {
	t.Helper()
	if out.Err != nil {
		t.Fatalf("execution failed: %v", out.Err)
	}
	var got, w any
	if err := json.Unmarshal(out.Output, &got); err != nil {
		t.Fatalf("output %s: %v", out.Output, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	if diff := cmp.Diff(w, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func mustFail(t *testing.T, out Outcome, name, causePart string) {
	t.Helper()
	if out.Err == nil {
		t.Fatalf("execution succeeded with %s, want error %s", out.Output, name)
	}
	if out.Err.Name != name || !strings.Contains(out.Err.Cause, causePart) {
		t.Errorf("error = %q (cause %q), want %q with a cause containing %q", out.Err.Name, out.Err.Cause, name, causePart)
	}
}

func stepNames(steps []serverlessv1.WorkflowStep) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}

func TestPassAndPaths(t *testing.T) {
	cases := []struct {
		name, spec, input, want string
	}{
		{"input passes through", `{startAt: a, states: {a: {type: Pass, end: true}}}`, `{"n": 1}`, `{"n": 1}`},
		{"result replaces", `{startAt: a, states: {a: {type: Pass, result: {x: [1, 2]}, end: true}}}`, `{"n": 1}`, `{"x": [1, 2]}`},
		{"result placed at resultPath", `{startAt: a, states: {a: {type: Pass, result: "hi", resultPath: $.greeting, end: true}}}`, `{"n": 1}`, `{"n": 1, "greeting": "hi"}`},
		{"inputPath and outputPath", `{startAt: a, states: {a: {type: Pass, inputPath: $.in, outputPath: $.v, end: true}}}`, `{"in": {"v": 7}}`, `7`},
		{"parameters", `{startAt: a, states: {a: {type: Pass, parameters: {"first.$": "$.xs[0]", fixed: true, deep: {"all.$": "$"}}, end: true}}}`,
			`{"xs": [4, 5]}`, `{"first": 4, "fixed": true, "deep": {"all": {"xs": [4, 5]}}}`},
		{"large numbers pass unchanged", `{startAt: a, states: {a: {type: Pass, end: true}}}`, `{"n": 12345678901234567890}`, `{"n": 12345678901234567890}`},
		{"empty input is an object", `{startAt: a, states: {a: {type: Pass, resultPath: $.r, result: 1, end: true}}}`, ``, `{"r": 1}`},
		{"succeed with outputPath", `{startAt: a, states: {a: {type: Pass, next: b}, b: {type: Succeed, outputPath: $.n}}}`, `{"n": 3}`, `3`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, _ := execute(t, arithmetic(), spec(t, tc.spec), tc.input)
			if tc.name == "large numbers pass unchanged" {
				if string(out.Output) != `{"n":12345678901234567890}` {
					t.Errorf("output = %s, want the number as written", out.Output)
				}
				return
			}
			mustSucceed(t, out, tc.want)
		})
	}
}

func TestTask(t *testing.T) {
	fns := arithmetic()
	s := spec(t, `
startAt: twice
states:
  twice: {type: Task, function: double, inputPath: $.arg, resultPath: $.res, next: more}
  more: {type: Task, function: inc, inputPath: $.res, end: true}
`)
	out, steps, _ := execute(t, fns, s, `{"arg": {"n": 5}, "keep": "x"}`)
	mustSucceed(t, out, `{"n": 11}`)
	if diff := cmp.Diff([]string{"twice", "more"}, stepNames(steps)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if got := steps[0].Output.String(); got != `{"arg":{"n":5},"keep":"x","res":{"n":10}}` {
		t.Errorf("first step's output = %s", got)
	}
	if steps[0].Input.String() != `{"arg":{"n":5},"keep":"x"}` || steps[0].Type != serverlessv1.StateTask {
		t.Errorf("first step = %+v", steps[0])
	}
}

func TestTaskErrors(t *testing.T) {
	cases := []struct {
		name, spec, error, cause string
	}{
		{"handler exception named by its type", `{startAt: a, states: {a: {type: Task, function: boom, end: true}}}`, "ValueError", "line 3, in handle"},
		{"unknown function", `{startAt: a, states: {a: {type: Task, function: nope, end: true}}}`, serverlessv1.ErrorTaskFailed, "404 Not Found"},
		{"task timeout", `{startAt: a, states: {a: {type: Task, function: hang, timeoutSeconds: 2, end: true}}}`, serverlessv1.ErrorTimeout, "within 2s"},
		{"execution timeout", `{timeoutSeconds: 3, startAt: a, states: {a: {type: Task, function: hang, end: true}}}`, serverlessv1.ErrorTimeout, "longer than 3s"},
		{"inputPath selects nothing", `{startAt: a, states: {a: {type: Task, function: echo, inputPath: $.nope, end: true}}}`, serverlessv1.ErrorRuntime, "inputPath $.nope"},
		{"fail state", `{startAt: a, states: {a: {type: Fail, error: Broken, cause: "on purpose"}}}`, "Broken", "on purpose"},
		{"no choice matched", `{startAt: a, states: {a: {type: Choice, choices: [{variable: $.n, numericEquals: 1, next: b}]}, b: {type: Succeed}}}`, serverlessv1.ErrorNoChoiceMatched, "no default"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, steps, _ := execute(t, arithmetic(), spec(t, tc.spec), `{"n": 2}`)
			mustFail(t, out, tc.error, tc.cause)
			if len(steps) == 0 || steps[len(steps)-1].Error != tc.error || steps[len(steps)-1].Output != nil {
				t.Errorf("last step = %+v, want the error and no output", steps)
			}
		})
	}
}

func TestChoice(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	s := func(v string) *string { return &v }
	b := func(v bool) *bool { return &v }
	type R = serverlessv1.ChoiceRule
	input := `{"n": 5, "s": "mango", "t": true, "z": null, "o": {"deep": [1, "two"]}}`
	cases := []struct {
		name string
		rule R
		want bool
	}{
		{"numericEquals", R{Variable: "$.n", NumericEquals: f(5)}, true},
		{"numericEquals other", R{Variable: "$.n", NumericEquals: f(4)}, false},
		{"numericLessThan", R{Variable: "$.n", NumericLessThan: f(6)}, true},
		{"numericLessThan equal", R{Variable: "$.n", NumericLessThan: f(5)}, false},
		{"numericGreaterThan", R{Variable: "$.n", NumericGreaterThan: f(4.5)}, true},
		{"numericLessThanEquals", R{Variable: "$.n", NumericLessThanEquals: f(5)}, true},
		{"numericGreaterThanEquals", R{Variable: "$.n", NumericGreaterThanEquals: f(5.1)}, false},
		{"numeric on a string", R{Variable: "$.s", NumericEquals: f(5)}, false},
		{"numeric deep", R{Variable: "$.o.deep[0]", NumericEquals: f(1)}, true},
		{"stringEquals", R{Variable: "$.s", StringEquals: s("mango")}, true},
		{"stringEquals on a number", R{Variable: "$.n", StringEquals: s("5")}, false},
		{"stringLessThan", R{Variable: "$.s", StringLessThan: s("n")}, true},
		{"stringGreaterThan", R{Variable: "$.s", StringGreaterThan: s("n")}, false},
		{"stringLessThanEquals", R{Variable: "$.s", StringLessThanEquals: s("mango")}, true},
		{"stringGreaterThanEquals", R{Variable: "$.o.deep[1]", StringGreaterThanEquals: s("two")}, true},
		{"booleanEquals", R{Variable: "$.t", BooleanEquals: b(true)}, true},
		{"booleanEquals false", R{Variable: "$.t", BooleanEquals: b(false)}, false},
		{"isPresent", R{Variable: "$.z", IsPresent: b(true)}, true},
		{"isPresent missing", R{Variable: "$.missing", IsPresent: b(false)}, true},
		{"isNull", R{Variable: "$.z", IsNull: b(true)}, true},
		{"isNull on a value", R{Variable: "$.n", IsNull: b(true)}, false},
		{"missing variable never compares", R{Variable: "$.missing", NumericLessThan: f(100)}, false},
		{"and", R{And: []R{{Variable: "$.n", NumericGreaterThan: f(1)}, {Variable: "$.t", BooleanEquals: b(true)}}}, true},
		{"and one false", R{And: []R{{Variable: "$.n", NumericGreaterThan: f(1)}, {Variable: "$.t", BooleanEquals: b(false)}}}, false},
		{"or", R{Or: []R{{Variable: "$.n", NumericGreaterThan: f(10)}, {Variable: "$.s", StringEquals: s("mango")}}}, true},
		{"or none", R{Or: []R{{Variable: "$.n", NumericGreaterThan: f(10)}, {Variable: "$.s", StringEquals: s("kiwi")}}}, false},
		{"not", R{Not: &R{Variable: "$.n", NumericEquals: f(5)}}, false},
		{"not not", R{Not: &R{Not: &R{Variable: "$.n", NumericEquals: f(5)}}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rule := tc.rule
			rule.Next = "yes"
			wf := &serverlessv1.WorkflowSpec{StartAt: "c", States: map[string]serverlessv1.State{
				"c":   {Type: serverlessv1.StateChoice, Choices: []R{rule}, Default: "no"},
				"yes": {Type: serverlessv1.StatePass, Result: serverlessv1.NewJSON([]byte(`true`)), End: true},
				"no":  {Type: serverlessv1.StatePass, Result: serverlessv1.NewJSON([]byte(`false`)), End: true},
			}}
			out, _, _ := execute(t, arithmetic(), wf, input)
			mustSucceed(t, out, fmt.Sprint(tc.want))
		})
	}
}

func TestChoiceFirstMatchWinsAndLoops(t *testing.T) {
	// Doubles until n passes 100, then says which band it ended in.
	s := spec(t, `
startAt: twice
states:
  twice: {type: Task, function: double, next: check}
  check:
    type: Choice
    choices:
    - {variable: $.n, numericLessThanEquals: 100, next: twice}
    - {variable: $.n, numericGreaterThan: 150, next: big}
    - {variable: $.n, numericGreaterThan: 100, next: small}
  big: {type: Pass, result: big, end: true}
  small: {type: Pass, result: small, end: true}
`)
	for _, tc := range []struct {
		in, want string
		calls    int
	}{{`{"n": 3}`, `"big"`, 6}, {`{"n": 13}`, `"small"`, 3}, {`{"n": 101}`, `"big"`, 1}} {
		fns := arithmetic()
		out, _, _ := execute(t, fns, s, tc.in)
		mustSucceed(t, out, tc.want)
		if got := fns.count("double"); got != tc.calls {
			t.Errorf("%s: double called %d times, want %d", tc.in, got, tc.calls)
		}
	}
}

func TestWait(t *testing.T) {
	cases := []struct {
		name, spec, input string
		least             time.Duration
	}{
		{"seconds", `{startAt: w, states: {w: {type: Wait, seconds: 5, end: true}}}`, `{}`, 5 * time.Second},
		{"secondsPath", `{startAt: w, states: {w: {type: Wait, secondsPath: $.s, end: true}}}`, `{"s": 2.5}`, 2500 * time.Millisecond},
		{"timestamp", `{startAt: w, states: {w: {type: Wait, timestamp: "2026-01-01T00:00:04Z", end: true}}}`, `{}`, 4 * time.Second},
		{"timestamp past", `{startAt: w, states: {w: {type: Wait, timestamp: "2025-01-01T00:00:00Z", end: true}}}`, `{}`, 0},
		{"timestampPath", `{startAt: w, states: {w: {type: Wait, timestampPath: $.at, end: true}}}`, `{"at": "2026-01-01T00:00:03Z"}`, 3 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, steps, took := execute(t, arithmetic(), spec(t, tc.spec), tc.input)
			mustSucceed(t, out, tc.input)
			if took < tc.least {
				t.Errorf("the execution took %s on the clock, want at least %s", took, tc.least)
			}
			if len(steps) != 1 || time.Duration(steps[0].DurationMilliseconds)*time.Millisecond < tc.least {
				t.Errorf("steps = %+v, want one lasting at least %s", steps, tc.least)
			}
		})
	}
	out, _, _ := execute(t, arithmetic(), spec(t, `{startAt: w, states: {w: {type: Wait, secondsPath: $.s, end: true}}}`), `{"s": "soon"}`)
	mustFail(t, out, serverlessv1.ErrorRuntime, "not a number")
}

func TestRetryThenSucceed(t *testing.T) {
	var calls atomic.Int32
	fns := arithmetic()
	fns.fns["flaky"] = func(_ context.Context, in map[string]any) (any, error) {
		if calls.Add(1) < 3 {
			return nil, &gateway.CallError{Status: http.StatusBadGateway, Message: "ConnectionError: try again", Traceback: "Traceback ..."}
		}
		return map[string]any{"ok": true}, nil
	}
	s := spec(t, `
startAt: a
states:
  a:
    type: Task
    function: flaky
    retry:
    - {errorEquals: [ValueError], maxAttempts: 5}
    - {errorEquals: [ConnectionError], intervalSeconds: 2, backoffRate: 3, maxAttempts: 2}
    end: true
`)
	out, steps, took := execute(t, fns, s, `{}`)
	mustSucceed(t, out, `{"ok": true}`)
	if calls.Load() != 3 {
		t.Errorf("flaky called %d times, want 3", calls.Load())
	}
	if len(steps) != 1 || steps[0].Attempts != 3 || steps[0].Error != "" {
		t.Errorf("steps = %+v, want one step of 3 attempts without error", steps)
	}
	if took < 8*time.Second { // 2 s, then 2 s times 3
		t.Errorf("retries took %s on the clock, want at least 8s", took)
	}
}

func TestRetriedThenCaught(t *testing.T) {
	fns := arithmetic()
	s := spec(t, `
startAt: a
states:
  a:
    type: Task
    function: boom
    retry: [{errorEquals: [States.TaskFailed], intervalSeconds: 1, maxAttempts: 2}]
    catch:
    - {errorEquals: [TypeError], next: wrong}
    - {errorEquals: [States.ALL], resultPath: $.error, next: recover}
    next: wrong
  wrong: {type: Fail, error: Wrong}
  recover: {type: Pass, end: true}
`)
	out, steps, _ := execute(t, fns, s, `{"n": -1}`)
	if out.Err != nil {
		t.Fatalf("execution failed: %v", out.Err)
	}
	var got struct {
		N     int
		Error struct{ Error, Cause string }
	}
	if err := json.Unmarshal(out.Output, &got); err != nil {
		t.Fatal(err)
	}
	if got.N != -1 || got.Error.Error != "ValueError" || !strings.Contains(got.Error.Cause, "n must be positive") || !strings.Contains(got.Error.Cause, "Traceback") {
		t.Errorf("output = %s, want the input with the error under $.error", out.Output)
	}
	if n := fns.count("boom"); n != 3 {
		t.Errorf("boom called %d times, want 3 (1 + 2 retries)", n)
	}
	if diff := cmp.Diff([]string{"a", "recover"}, stepNames(steps)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if steps[0].Error != "ValueError" || steps[0].Output == nil || steps[0].Attempts != 3 {
		t.Errorf("caught step = %+v, want its error, its output and 3 attempts", steps[0])
	}
}

func TestTimeoutIsNotATaskFailure(t *testing.T) {
	s := spec(t, `
startAt: a
states:
  a:
    type: Task
    function: hang
    timeoutSeconds: 1
    retry: [{errorEquals: [States.TaskFailed], maxAttempts: 3}]
    catch: [{errorEquals: [States.Timeout], next: late}]
    end: true
  late: {type: Pass, result: late, end: true}
`)
	fns := arithmetic()
	out, _, _ := execute(t, fns, s, `{}`)
	mustSucceed(t, out, `"late"`)
	if n := fns.count("hang"); n != 1 {
		t.Errorf("hang called %d times; States.TaskFailed must not retry a timeout", n)
	}
}

func TestParallel(t *testing.T) {
	s := spec(t, `
startAt: fan
states:
  fan:
    type: Parallel
    resultPath: $.results
    branches:
    - {startAt: d, states: {d: {type: Task, function: double, end: true}}}
    - {startAt: i, states: {i: {type: Task, function: inc, next: i2}, i2: {type: Task, function: inc, end: true}}}
    - {startAt: p, states: {p: {type: Pass, result: fixed, end: true}}}
    end: true
`)
	out, steps, _ := execute(t, arithmetic(), s, `{"n": 10}`)
	mustSucceed(t, out, `{"n": 10, "results": [{"n": 20}, {"n": 12}, "fixed"]}`)
	names := stepNames(steps)
	sort.Strings(names)
	if diff := cmp.Diff([]string{"fan", "fan[0].d", "fan[1].i", "fan[1].i2", "fan[2].p"}, names); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if steps[len(steps)-1].Name != "fan" {
		t.Errorf("the Parallel state's step is %q, want it after its branches' steps", steps[len(steps)-1].Name)
	}

	failing := spec(t, `
startAt: fan
states:
  fan:
    type: Parallel
    branches:
    - {startAt: h, states: {h: {type: Task, function: hang, end: true}}}
    - {startAt: b, states: {b: {type: Task, function: boom, end: true}}}
    catch: [{errorEquals: [ValueError], next: caught}]
    end: true
  caught: {type: Pass, end: true}
`)
	out, _, _ = execute(t, arithmetic(), failing, `{"n": 1}`)
	mustSucceed(t, out, `{"Error": "ValueError", "Cause": "n must be positive\nTraceback (most recent call last):\n  File \"main.py\", line 3, in handle\nValueError: n must be positive"}`)
}

func TestMap(t *testing.T) {
	var inFlight, most atomic.Int32
	fns := arithmetic()
	fns.fns["slow"] = func(ctx context.Context, in map[string]any) (any, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		return map[string]any{"n": num(in["n"]) * 2}, nil
	}
	s := spec(t, `
startAt: each
states:
  each:
    type: Map
    itemsPath: $.items
    maxConcurrency: 2
    iterator: {startAt: s, states: {s: {type: Task, function: slow, outputPath: $.n, end: true}}}
    end: true
`)
	out, steps, _ := execute(t, fns, s, `{"items": [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}, {"n": 5}]}`)
	mustSucceed(t, out, `[2, 4, 6, 8, 10]`)
	if m := most.Load(); m > 2 || m < 1 {
		t.Errorf("%d items ran at once, want at most 2", m)
	}
	if len(steps) != 6 {
		t.Errorf("got %d steps, want 5 items and the Map: %v", len(steps), stepNames(steps))
	}

	out, _, _ = execute(t, fns, s, `{"items": {"n": 1}}`)
	mustFail(t, out, serverlessv1.ErrorRuntime, "not an array")
	out, _, _ = execute(t, fns, s, `{"items": []}`)
	mustSucceed(t, out, `[]`)
}

func TestTransitionsBounded(t *testing.T) {
	// A loop with a way out that the input never takes.
	s := spec(t, `
startAt: a
states:
  a: {type: Pass, next: c}
  c: {type: Choice, choices: [{variable: $.stop, isPresent: true, next: done}], default: a}
  done: {type: Succeed}
`)
	in := &Interpreter{Invoker: arithmetic(), Clock: clock.NewFake(time.Now())}
	out := in.Run(t.Context(), "ns1", s, []byte(`{}`), nil)
	mustFail(t, out, serverlessv1.ErrorRuntime, "more than 10000")
}

func TestInputNotJSON(t *testing.T) {
	in := &Interpreter{Invoker: arithmetic(), Clock: clock.NewFake(time.Now())}
	out := in.Run(t.Context(), "ns1", spec(t, `{startAt: a, states: {a: {type: Succeed}}}`), []byte(`{"a": `), nil)
	mustFail(t, out, serverlessv1.ErrorRuntime, "not JSON")
}

func TestRetryDelay(t *testing.T) {
	i := func(v int32) *int32 { return &v }
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		rule serverlessv1.Retry
		n    int
		want time.Duration
	}{
		{serverlessv1.Retry{}, 0, time.Second},
		{serverlessv1.Retry{}, 1, 2 * time.Second},
		{serverlessv1.Retry{}, 3, 8 * time.Second},
		{serverlessv1.Retry{IntervalSeconds: i(3), BackoffRate: f(1)}, 4, 3 * time.Second},
		{serverlessv1.Retry{IntervalSeconds: i(2), BackoffRate: f(1.5)}, 2, 4500 * time.Millisecond},
		{serverlessv1.Retry{IntervalSeconds: i(60), BackoffRate: f(10)}, 9, 24 * time.Hour},
	}
	for _, tc := range cases {
		if got := RetryDelay(tc.rule, tc.n); got != tc.want {
			t.Errorf("RetryDelay(%+v, %d) = %s, want %s", tc.rule, tc.n, got, tc.want)
		}
	}
}

func TestErrorNames(t *testing.T) {
	cases := []struct {
		err  error
		want Error
	}{
		{&gateway.CallError{Status: 502, Message: "KeyError: 'n'", Traceback: "tb"}, Error{"KeyError", "'n'\ntb"}},
		{&gateway.CallError{Status: 502, Message: "no pod of ns1/f answered"}, Error{serverlessv1.ErrorTaskFailed, "502 Bad Gateway: no pod of ns1/f answered"}},
		{&gateway.CallError{Status: 504, Message: "function ns1/f did not answer within 30s"}, Error{serverlessv1.ErrorTimeout, "function ns1/f did not answer within 30s"}},
		{&gateway.CallError{Status: 429, Message: "queue full"}, Error{serverlessv1.ErrorTaskFailed, "429 Too Many Requests: queue full"}},
		{&gateway.CallError{Status: 502, Message: "it broke", Traceback: "tb"}, Error{"Exception", "it broke\ntb"}},
		{fmt.Errorf("call: %w", &Error{Name: "Custom", Cause: "c"}), Error{"Custom", "c"}},
		{context.DeadlineExceeded, Error{serverlessv1.ErrorTimeout, "context deadline exceeded"}},
		{errors.New("dial tcp: refused"), Error{serverlessv1.ErrorTaskFailed, "dial tcp: refused"}},
	}
	for _, tc := range cases {
		if got := asError(tc.err); *got != tc.want {
			t.Errorf("asError(%v) = %+v, want %+v", tc.err, *got, tc.want)
		}
	}
	for _, tc := range []struct {
		equals []string
		name   string
		want   bool
	}{
		{[]string{"States.ALL"}, "States.Timeout", true},
		{[]string{"States.TaskFailed"}, "ValueError", true},
		{[]string{"States.TaskFailed"}, "States.Timeout", false},
		{[]string{"ValueError", "KeyError"}, "KeyError", true},
		{[]string{"ValueError"}, "States.TaskFailed", false},
	} {
		if got := matches(tc.equals, tc.name); got != tc.want {
			t.Errorf("matches(%v, %s) = %v, want %v", tc.equals, tc.name, got, tc.want)
		}
	}
}
