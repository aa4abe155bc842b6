package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/workqueue/clock"
)

// fakeAPI keeps workflows and executions in memory, applying status patches as the
// apiserver's merge patch would for the fields the executor writes.
type fakeAPI struct {
	mu         sync.Mutex
	workflows  map[string]*serverlessv1.Workflow
	executions map[string]*serverlessv1.WorkflowExecution
	patches    int
}

func (f *fakeAPI) GetWorkflow(_ context.Context, ns, name string) (*serverlessv1.Workflow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	wf, ok := f.workflows[ns+"/"+name]
	if !ok {
		return nil, apierror.NotFound(serverlessv1.GroupName, "workflows", name)
	}
	return wf.DeepCopy(), nil
}

func (f *fakeAPI) CreateExecution(_ context.Context, e *serverlessv1.WorkflowExecution) (*serverlessv1.WorkflowExecution, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := e.DeepCopy()
	out.Name = fmt.Sprintf("%s%d", e.GenerateName, len(f.executions)+1)
	out.Status = serverlessv1.WorkflowExecutionStatus{}
	f.executions[out.Namespace+"/"+out.Name] = out
	return out.DeepCopy(), nil
}

func (f *fakeAPI) PatchExecutionStatus(_ context.Context, ns, name string, patch []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.executions[ns+"/"+name]
	if !ok {
		return apierror.NotFound(serverlessv1.GroupName, "workflowexecutions", name)
	}
	var p struct {
		Status serverlessv1.WorkflowExecutionStatus
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return err
	}
	e.Status = p.Status
	f.patches++
	return nil
}

func (f *fakeAPI) PatchExecution(_ context.Context, ns, name string, patch []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.executions[ns+"/"+name]
	if !ok {
		return apierror.NotFound(serverlessv1.GroupName, "workflowexecutions", name)
	}
	var p struct{ Metadata metav1.ObjectMeta }
	if err := json.Unmarshal(patch, &p); err != nil {
		return err
	}
	e.OwnerReferences = p.Metadata.OwnerReferences
	e.Labels = p.Metadata.Labels
	return nil
}

func (f *fakeAPI) execution(name string) *serverlessv1.WorkflowExecution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.executions["ns1/"+name].DeepCopy()
}

func newFakeAPI(t *testing.T) *fakeAPI {
	wf := &serverlessv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "pipe", Namespace: "ns1", UID: "u1", Generation: 2},
		Spec: *spec(t, `
startAt: twice
states:
  twice: {type: Task, function: double, next: check}
  check: {type: Choice, choices: [{variable: $.n, numericGreaterThan: 10, next: big}], default: small}
  big: {type: Task, function: boom, end: true}
  small: {type: Succeed}
`)}
	return &fakeAPI{workflows: map[string]*serverlessv1.Workflow{"ns1/pipe": wf}, executions: map[string]*serverlessv1.WorkflowExecution{}}
}

func TestHandler(t *testing.T) {
	api := newFakeAPI(t)
	x := &Executor{Interpreter: &Interpreter{Invoker: arithmetic(), Clock: clock.Real{}}, API: api, Instance: "node1/abc"}
	srv := httptest.NewServer(Handler(x))
	defer srv.Close()
	post := func(path, body string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, mustRead(t, resp))
		return resp, b.String()
	}

	resp, body := post("/workflow/ns1/pipe", `{"n": 2}`)
	if resp.StatusCode != 200 || strings.TrimSpace(body) != `{"n":4}` {
		t.Fatalf("small branch: %d %s", resp.StatusCode, body)
	}
	name := resp.Header.Get(HeaderExecution)
	e := api.execution(name)
	if e == nil {
		t.Fatalf("no execution %q recorded", name)
	}
	if e.Spec.Workflow != "pipe" || e.Spec.Input.String() != `{"n":2}` || len(e.OwnerReferences) != 1 || e.OwnerReferences[0].UID != "u1" ||
		e.Labels[LabelWorkflow] != "pipe" || e.Annotations[AnnotationStartedBy] != "node1/abc" {
		t.Errorf("execution = %+v", e)
	}
	st := e.Status
	if st.Phase != serverlessv1.ExecutionSucceeded || st.Output.String() != `{"n":4}` || st.StartTime == nil || st.CompletionTime == nil || st.WorkflowGeneration != 2 {
		t.Errorf("status = %+v", st)
	}
	if got := stepNames(st.Steps); strings.Join(got, ",") != "twice,check,small" {
		t.Errorf("steps = %v", got)
	}

	resp, body = post("/workflow/ns1/pipe", `{"n": 6}`)
	var failed FailedBody
	if err := json.Unmarshal([]byte(body), &failed); err != nil || resp.StatusCode != http.StatusUnprocessableEntity ||
		failed.Name != "ValueError" || !strings.Contains(failed.Cause, "n must be positive") || failed.Execution != resp.Header.Get(HeaderExecution) ||
		failed.Error != "ValueError: n must be positive (execution "+failed.Execution+")" || !strings.HasPrefix(failed.Traceback, "Traceback (most recent call last):") {
		t.Fatalf("big branch: %d %s", resp.StatusCode, body)
	}
	if e := api.execution(failed.Execution); e.Status.Phase != serverlessv1.ExecutionFailed || e.Status.Error != "ValueError" || e.Status.Output != nil {
		t.Errorf("failed execution's status = %+v", e.Status)
	}

	for _, tc := range []struct {
		path, body string
		code       int
	}{
		{"/workflow/ns1/nope", `{}`, 404},
		{"/workflow/ns2/pipe", `{}`, 404},
		{"/workflow/ns1", `{}`, 404},
		{"/workflow/ns1/pipe", `{"n": `, 400},
		{"/workflow/ns1/pipe", `not json`, 400},
	} {
		resp, body := post(tc.path, tc.body)
		if resp.StatusCode != tc.code || !strings.Contains(body, `"error"`) || resp.Header.Get(HeaderExecution) != "" {
			t.Errorf("POST %s %s = %d %s, want %d with an error and no execution", tc.path, tc.body, resp.StatusCode, body, tc.code)
		}
	}
	if n := len(api.executions); n != 2 {
		t.Errorf("%d executions recorded, want 2 (bad calls record none)", n)
	}
}

func TestExecutorKeepsFewSteps(t *testing.T) {
	api := newFakeAPI(t)
	api.workflows["ns1/loop"] = &serverlessv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "loop", Namespace: "ns1"}, Spec: *spec(t, `
startAt: inc
states:
  inc: {type: Task, function: inc, next: check}
  check: {type: Choice, choices: [{variable: $.n, numericLessThan: 20, next: inc}], default: done}
  done: {type: Succeed}
`)}
	x := &Executor{Interpreter: &Interpreter{Invoker: arithmetic(), Clock: clock.Real{}}, API: api, MaxSteps: 5}
	wf, _ := api.GetWorkflow(t.Context(), "ns1", "loop")
	e, err := x.Start(t.Context(), wf, []byte(`{"n": 0}`))
	if err != nil {
		t.Fatal(err)
	}
	out := x.Run(t.Context(), wf, e, []byte(`{"n": 0}`))
	if out.Err != nil || string(out.Output) != `{"n":20}` {
		t.Fatalf("outcome = %s %v", out.Output, out.Err)
	}
	got := api.execution(e.Name).Status
	if len(got.Steps) != 5 || got.StepsOmitted != 36 { // 20 incs, 20 checks, done
		t.Errorf("kept %d steps and omitted %d, want 5 and 36", len(got.Steps), got.StepsOmitted)
	}
	if got.CompletionTime.Before(got.StartTime) || got.CompletionTime.Time.After(time.Now()) {
		t.Errorf("times = %v .. %v", got.StartTime, got.CompletionTime)
	}
}

func mustRead(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

func TestExecutorWritesProgress(t *testing.T) {
	api := newFakeAPI(t)
	api.workflows["ns1/slow"] = &serverlessv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "ns1"}, Spec: *spec(t, `
startAt: first
states:
  first: {type: Pass, next: nap}
  nap: {type: Wait, seconds: 60, end: true}
`)}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	x := &Executor{Interpreter: &Interpreter{Invoker: arithmetic(), Clock: clk}, API: api, ProgressInterval: time.Second}
	wf, _ := api.GetWorkflow(t.Context(), "ns1", "slow")
	e, err := x.Start(t.Context(), wf, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Outcome)
	go func() { done <- x.Run(t.Context(), wf, e, []byte(`{}`)) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := api.execution(e.Name).Status
		if st.Phase == serverlessv1.ExecutionRunning && len(st.Steps) == 1 && st.Steps[0].Name == "first" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress written while the execution waits: %+v", st)
		}
		clk.Step(500 * time.Millisecond)
		time.Sleep(5 * time.Millisecond)
	}
	for {
		select {
		case out := <-done:
			if out.Err != nil {
				t.Fatalf("execution failed: %v", out.Err)
			}
			if st := api.execution(e.Name).Status; st.Phase != serverlessv1.ExecutionSucceeded || len(st.Steps) != 2 {
				t.Errorf("final status = %+v", st)
			}
			return
		default:
			if time.Now().After(deadline) {
				t.Fatal("the execution did not end")
			}
			clk.Step(5 * time.Second)
			time.Sleep(time.Millisecond)
		}
	}
}
