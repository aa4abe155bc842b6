package describe

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func describeYAML(t *testing.T, doc string, now time.Time) string {
	t.Helper()
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ObjectAt(&buf, &obj, nil, now); err != nil {
		t.Fatalf("describe: %v", err)
	}
	return buf.String()
}

func TestDescribeWorkflow(t *testing.T) {
	out := describeYAML(t, `
apiVersion: serverless.minik8s.io/v1
kind: Workflow
metadata: {name: pipe, namespace: default, creationTimestamp: "2025-01-01T09:00:00Z"}
spec:
  startAt: clean
  states:
    clean:
      type: Task
      function: text-clean
      timeoutSeconds: 5
      retry: [{errorEquals: [States.TaskFailed]}]
      catch: [{errorEquals: [States.ALL], next: oops}]
      next: check
    check: {type: Choice, choices: [{variable: $.words, numericGreaterThan: 40, next: fan}], default: oops}
    fan:
      type: Map
      itemsPath: $.parts
      iterator: {startAt: w, states: {w: {type: Wait, seconds: 1, end: true}}}
      end: true
    oops: {type: Fail, error: Broken}
`, time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))
	for _, want := range []string{
		"Start At:           clean\n",
		"Timeout:            300s (default)\n",
		"clean  Task    function text-clean, timeout 5s, retry on States.TaskFailed  check, oops (on States.ALL)\n",
		"check  Choice  1 rules",
		"fan, oops (default)\n",
		"oops   Fail    error Broken",
		"fan iterator (start at w):\n",
		"w     Wait  1s       (end)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
}

func TestDescribeWorkflowExecution(t *testing.T) {
	out := describeYAML(t, `
apiVersion: serverless.minik8s.io/v1
kind: WorkflowExecution
metadata: {name: pipe-x1, namespace: default, creationTimestamp: "2025-01-01T11:59:00Z"}
spec: {workflow: pipe, input: {"n": 1}}
status:
  phase: Failed
  startTime: "2025-01-01T11:59:00Z"
  completionTime: "2025-01-01T11:59:01Z"
  durationMilliseconds: 1500
  error: ValueError
  cause: "bad n\nTraceback..."
  stepsOmitted: 4
  steps:
  - {name: double, type: Task, input: {"n": 1}, output: {"n": 2}, startTime: "2025-01-01T11:59:00Z", durationMilliseconds: 12}
  - {name: check, type: Task, input: {"n": 2}, error: ValueError, cause: "bad n\nTraceback (most recent call last):\nValueError: bad n", attempts: 3, startTime: "2025-01-01T11:59:00Z", durationMilliseconds: 1400}
`, time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))
	for _, want := range []string{
		"Workflow:           pipe\n", "Input:              {\"n\":1}\n", "Phase:              Failed\n",
		"Duration:           1s\n", "Error:              ValueError\n", "Cause:              bad n Traceback...\n",
		"1  double  Task  12ms      1         {\"n\":1}  {\"n\":2}  -\n",
		"2  check   Task  1s        3         {\"n\":2}  -        ValueError\n",
		"(4 more steps not kept)\n",
		"Step 2 (check) ValueError:\n  bad n\n  Traceback (most recent call last):\n  ValueError: bad n\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Output:") {
		t.Errorf("a failed execution shows an output:\n%s", out)
	}
}
