package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/client"
)

// alwaysFailsWorkflow calls the fail function with no retry or catch: the execution fails.
const alwaysFailsWorkflow = `apiVersion: serverless.minik8s.io/v1
kind: Workflow
metadata: {name: always-fails}
spec:
  startAt: try
  states:
    try: {type: Task, function: fail, end: true}
`

// badWorkflow has an unknown state type, a target that does not exist, a bad path, a state
// nothing leads to, and a Parallel branch whose own state names an unknown next.
const badWorkflow = `apiVersion: serverless.minik8s.io/v1
kind: Workflow
metadata: {name: bad}
spec:
  startAt: a
  states:
    a: {type: Taks, next: b}
    b: {type: Pass, next: nowhere, inputPath: "n"}
    c: {type: Succeed}
    d:
      type: Parallel
      branches: [{startAt: x, states: {x: {type: Pass, next: later}}}]
      end: true
`

// workflowCall is one answer of POST /workflow.
type workflowCall struct {
	code      int
	raw       string
	execution string
}

func (c *makeUpCluster) runWorkflow(ctx context.Context, ns, name, body string) (workflowCall, error) {
	code, raw, header, err := c.post(ctx, 3*time.Minute, "/workflow/"+ns+"/"+name, body)
	if err != nil {
		return workflowCall{}, err
	}
	return workflowCall{code: code, raw: strings.TrimSpace(string(raw)), execution: header.Get("X-Workflow-Execution")}, nil
}

// tableRow is the fields of the row of a table whose first column is name.
func tableRow(table, name string) []string {
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	return nil
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

// TestWorkflows runs the example workflows of configs/serverless on the make up cluster: a
// Choice takes each branch for the right input (through the gateway and both kubectls), a
// Task that fails is retried and then caught, an uncaught failure answers 422 and is recorded
// as Failed, executions are listed and described by both kubectls with their trace, one
// created with kubectl is run, a bad definition is refused with 422 by the real kubectl, and
// deleting a workflow deletes its executions.
func TestWorkflows(t *testing.T) {
	c := requireMakeUp(t)
	ns := fmt.Sprintf("e2e-wf-%d", time.Now().UnixNano()%1_000_000)
	kc := []string{"--kubeconfig", c.kubeconfig}
	ours := func(args ...string) string {
		return execOK(t, append([]string{bins.kubectl}, append(kc, args...)...)...)
	}
	real := func(args ...string) string {
		return execOK(t, append([]string{realKubectl}, append(kc, args...)...)...)
	}
	real("create", "namespace", ns)
	t.Cleanup(func() {
		_, _ = execErr(context.Background(), realKubectl, "--kubeconfig", c.kubeconfig, "delete", "namespace", ns, "--wait=false")
	})
	configs := "../../configs/serverless/"
	ours("-n", ns, "apply", "-f", configs+"double.yaml", "-f", configs+"fail.yaml",
		"-f", configs+"numbers-workflow.yaml", "-f", configs+"retry-workflow.yaml")
	functions := client.MustFor[*serverlessv1.Function, *serverlessv1.FunctionList](c.cl)
	executions := client.MustFor[*serverlessv1.WorkflowExecution, *serverlessv1.WorkflowExecutionList](c.cl)
	for _, fn := range []string{"double", "fail"} {
		eventually(t, 5*time.Minute, "function "+fn+" built", func() bool {
			f, err := functions.Get(t.Context(), ns, fn, metav1.GetOptions{})
			return err == nil && f.Status.Phase == "Ready" && f.Status.Image != ""
		})
	}
	getExecution := func(name string) *serverlessv1.WorkflowExecution {
		t.Helper()
		e, err := executions.Get(t.Context(), ns, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get execution %s: %v", name, err)
		}
		return e
	}
	mustRun := func(name, body string, code int) workflowCall {
		t.Helper()
		r, err := c.runWorkflow(t.Context(), ns, name, body)
		if err != nil {
			t.Fatalf("run %s %s: %v", name, body, err)
		}
		if r.code != code || r.execution == "" {
			t.Fatalf("run %s %s: %d %s (execution %q), want %d and an execution", name, body, r.code, r.raw, r.execution, code)
		}
		return r
	}
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	var bigExecution string
	step("choice takes each branch", func(t *testing.T) {
		for _, tc := range []struct{ in, want string }{
			{`{"n": 60}`, `{"n": 120, "verdict": {"size": "big"}}`},
			{`{"n": 50}`, `{"n": 100, "verdict": {"size": "big"}}`},
			{`{"n": 49}`, `{"n": 98, "verdict": {"size": "small"}}`},
			{`{"n": -3}`, `{"n": -6, "verdict": {"size": "small"}}`},
		} {
			r := mustRun("numbers", tc.in, http.StatusOK)
			if !sameJSON(r.raw, tc.want) {
				t.Errorf("numbers %s = %s, want %s", tc.in, r.raw, tc.want)
			}
			if bigExecution == "" {
				bigExecution = r.execution
			}
		}
		if out := ours("execute", "workflow", ns+"/numbers", `{"n": 7}`); !sameJSON(out, `{"n": 14, "verdict": {"size": "small"}}`) {
			t.Errorf("kubectl execute workflow = %s", out)
		}
		body := filepath.Join(t.TempDir(), "body.json")
		if err := os.WriteFile(body, []byte(`{"n": 500}`), 0o600); err != nil {
			t.Fatal(err)
		}
		out := real("create", "--raw", "/apis/serverless.minik8s.io/v1/namespaces/"+ns+"/workflows/numbers/invoke", "-f", body)
		if !sameJSON(out, `{"n": 1000, "verdict": {"size": "big"}}`) {
			t.Errorf("real kubectl create --raw .../invoke = %s", out)
		}
		e := getExecution(bigExecution)
		st := e.Status
		if st.Phase != serverlessv1.ExecutionSucceeded || !sameJSON(st.Output.String(), `{"n": 120, "verdict": {"size": "big"}}`) ||
			st.StartTime == nil || st.CompletionTime == nil || e.Spec.Workflow != "numbers" || !sameJSON(e.Spec.Input.String(), `{"n": 60}`) {
			t.Errorf("execution %s = %+v %+v", bigExecution, e.Spec, st)
		}
		var names []string
		for _, s := range st.Steps {
			names = append(names, s.Name)
		}
		if strings.Join(names, ",") != "double,size,big" || !sameJSON(st.Steps[0].Output.String(), `{"n": 120}`) {
			t.Errorf("steps = %v (%+v), want double, size, big", names, st.Steps)
		}
		if len(e.OwnerReferences) != 1 || e.OwnerReferences[0].Kind != "Workflow" || e.OwnerReferences[0].Name != "numbers" {
			t.Errorf("owners = %+v, want the workflow", e.OwnerReferences)
		}
	})

	step("a failing task is retried and then caught", func(t *testing.T) {
		r := mustRun("retry-catch", `{"n": 1}`, http.StatusOK)
		var out struct {
			N         int
			Recovered bool
			Error     struct{ Error, Cause string }
		}
		if err := json.Unmarshal([]byte(r.raw), &out); err != nil {
			t.Fatalf("output %s: %v", r.raw, err)
		}
		if out.N != 1 || !out.Recovered || out.Error.Error != "RuntimeError" || !strings.Contains(out.Error.Cause, "n=1 is never good enough") ||
			!strings.Contains(out.Error.Cause, "Traceback") {
			t.Errorf("output = %s, want the RuntimeError with its traceback under error and recovered", r.raw)
		}
		st := getExecution(r.execution).Status
		if st.Phase != serverlessv1.ExecutionSucceeded || len(st.Steps) != 2 {
			t.Fatalf("execution = %+v", st)
		}
		if try := st.Steps[0]; try.Name != "try" || try.Attempts != 3 || try.Error != "RuntimeError" || try.Output == nil {
			t.Errorf("the Task's step = %+v, want 3 attempts, its error and the catch's output", try)
		}
		// The retries wait 1 s, then 2 s.
		if st.DurationMilliseconds < 3000 {
			t.Errorf("the execution took %d ms, want at least the 3 s of back-off", st.DurationMilliseconds)
		}
		// Another error than the retried one is caught at once.
		r = mustRun("retry-catch", `{}`, http.StatusOK)
		if !strings.Contains(r.raw, `"Error":"ValueError"`) {
			t.Errorf("output = %s, want the ValueError caught", r.raw)
		}
		if try := getExecution(r.execution).Status.Steps[0]; try.Attempts > 1 || try.Error != "ValueError" {
			t.Errorf("the Task's step = %+v, want one attempt (ValueError is not retried)", try)
		}
	})

	step("an uncaught failure", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "always-fails.yaml")
		if err := os.WriteFile(path, []byte(alwaysFailsWorkflow), 0o600); err != nil {
			t.Fatal(err)
		}
		real("-n", ns, "apply", "-f", path)
		r := mustRun("always-fails", `{"n": 2}`, http.StatusUnprocessableEntity)
		var body struct{ Error, Name, Cause, Execution string }
		if err := json.Unmarshal([]byte(r.raw), &body); err != nil || body.Name != "RuntimeError" || body.Execution != r.execution ||
			!strings.Contains(body.Error, "n=2 is never good enough") || !strings.Contains(body.Cause, "Traceback") {
			t.Errorf("answer = %s", r.raw)
		}
		if st := getExecution(r.execution).Status; st.Phase != serverlessv1.ExecutionFailed || st.Error != "RuntimeError" || st.Output != nil {
			t.Errorf("execution = %+v", st)
		}
		out, err := execErr(t.Context(), bins.kubectl, "--kubeconfig", c.kubeconfig, "execute", "workflow", ns+"/always-fails", `{"n": 3}`)
		if err == nil || !strings.Contains(out, "RuntimeError: n=3 is never good enough (execution always-fails-") {
			t.Errorf("kubectl execute of a failing workflow: %v\n%s", err, out)
		}
		if r, _ := c.runWorkflow(t.Context(), ns, "nope", `{}`); r.code != http.StatusNotFound {
			t.Errorf("unknown workflow: %d %s", r.code, r.raw)
		}
		if r, _ := c.runWorkflow(t.Context(), ns, "numbers", `{"n": `); r.code != http.StatusBadRequest || r.execution != "" {
			t.Errorf("a body that is not JSON: %d %s", r.code, r.raw)
		}
	})

	step("executions through kubectl", func(t *testing.T) {
		for _, k := range []func(...string) string{real, ours} {
			out := k("-n", ns, "get", "workflowexecutions")
			if !strings.Contains(out, "WORKFLOW") || !strings.Contains(out, "PHASE") || !strings.Contains(out, "DURATION") {
				t.Errorf("get workflowexecutions has no WORKFLOW, PHASE, DURATION columns:\n%s", out)
			}
			if row := tableRow(out, bigExecution); len(row) < 4 || row[1] != "numbers" || row[2] != "Succeeded" || !strings.HasSuffix(row[3], "ms") && !strings.HasSuffix(row[3], "s") {
				t.Errorf("get workflowexecutions: row of %s = %v:\n%s", bigExecution, row, out)
			}
			if !strings.Contains(out, "Failed") {
				t.Errorf("get workflowexecutions lists no Failed execution:\n%s", out)
			}
			if row := tableRow(k("-n", ns, "get", "wf"), "retry-catch"); len(row) < 3 || row[1] != "try" || row[2] != "3" {
				t.Errorf("get wf: row of retry-catch = %v", row)
			}
		}
		out := ours("-n", ns, "describe", "wfx", bigExecution)
		for _, want := range []string{"Workflow:           numbers", "Phase:              Succeeded", "1  double  Task", "3  big     Pass"} {
			if !strings.Contains(out, want) {
				t.Errorf("describe wfx lacks %q:\n%s", want, out)
			}
		}
		if out := real("-n", ns, "describe", "wfx", bigExecution); !strings.Contains(out, "Steps:") || !strings.Contains(out, "double") {
			t.Errorf("real describe wfx:\n%s", out)
		}
		path := filepath.Join(t.TempDir(), "wfx.yaml")
		if err := os.WriteFile(path, []byte("apiVersion: serverless.minik8s.io/v1\nkind: WorkflowExecution\nmetadata: {name: by-hand}\n"+
			"spec: {workflow: numbers, input: {\"n\": 51}}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		real("-n", ns, "create", "-f", path)
		var e *serverlessv1.WorkflowExecution
		eventually(t, time.Minute, "the execution created with kubectl to run", func() bool {
			e = getExecution("by-hand")
			return e.Status.Phase == serverlessv1.ExecutionSucceeded || e.Status.Phase == serverlessv1.ExecutionFailed
		})
		if !sameJSON(e.Status.Output.String(), `{"n": 102, "verdict": {"size": "big"}}`) || len(e.OwnerReferences) != 1 {
			t.Errorf("execution created with kubectl: %+v, owners %+v", e.Status, e.OwnerReferences)
		}
	})

	step("a bad definition is refused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(path, []byte(badWorkflow), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := execErr(t.Context(), realKubectl, "--kubeconfig", c.kubeconfig, "-n", ns, "apply", "-f", path)
		if err == nil {
			t.Fatalf("apply of a bad workflow succeeded:\n%s", out)
		}
		for _, want := range []string{`is invalid`, `spec.states[a].type: Unsupported value: "Taks"`, `spec.states[b].next: Not found: "nowhere"`,
			`spec.states[b].inputPath: Invalid value: "n"`, `spec.states[d].branches[0].states[x].next: Not found: "later"`} {
			if !strings.Contains(out, want) {
				t.Errorf("the refusal lacks %q:\n%s", want, out)
			}
		}
		raw, err := execErr(t.Context(), realKubectl, "--kubeconfig", c.kubeconfig, "-n", ns, "create", "-f", path, "-v=6")
		if err == nil || !strings.Contains(raw, "422") {
			t.Errorf("create of a bad workflow did not get 422:\n%s", raw)
		}
		// Once the states are fixed, only the unreachable ones are left to report.
		fixed := strings.NewReplacer("Taks", "Task, function: double", "nowhere", "c", `"n"`, `"$.n"`, "next: later", "end: true").Replace(badWorkflow)
		if err := os.WriteFile(path, []byte(fixed), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err = execErr(t.Context(), realKubectl, "--kubeconfig", c.kubeconfig, "-n", ns, "apply", "-f", path)
		if err == nil || !strings.Contains(out, "spec.states[d]: Invalid value") || !strings.Contains(out, "unreachable from startAt") {
			t.Errorf("apply of a workflow with an unreachable state: %v\n%s", err, out)
		}
	})

	step("deleting a workflow deletes its executions", func(t *testing.T) {
		real("-n", ns, "delete", "workflow", "numbers")
		eventually(t, 2*time.Minute, "the executions of numbers to be deleted", func() bool {
			l, err := executions.List(t.Context(), ns, metav1.ListOptions{LabelSelector: serverlessv1.GroupName + "/workflow=numbers"})
			return err == nil && len(l.Items) == 0
		})
		l, err := executions.List(t.Context(), ns, metav1.ListOptions{})
		if err != nil || len(l.Items) == 0 {
			t.Errorf("the other workflows' executions are gone too: %v", err)
		}
	})
}
