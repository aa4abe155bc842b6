package workflow

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

func TestComponentRunsExecutionsCreatedThroughTheAPI(t *testing.T) {
	api := newFakeAPI(t)
	c := New(Config{API: api, Invoker: arithmetic(), Host: "node1"})
	mine := &serverlessv1.WorkflowExecution{ObjectMeta: metav1.ObjectMeta{Name: "by-kubectl", Namespace: "ns1"},
		Spec: serverlessv1.WorkflowExecutionSpec{Workflow: "pipe", Input: serverlessv1.NewJSON([]byte(`{"n":1}`))}}
	gone := &serverlessv1.WorkflowExecution{ObjectMeta: metav1.ObjectMeta{Name: "no-workflow", Namespace: "ns1"},
		Spec: serverlessv1.WorkflowExecutionSpec{Workflow: "nope"}}
	started := &serverlessv1.WorkflowExecution{ObjectMeta: metav1.ObjectMeta{Name: "by-gateway", Namespace: "ns1",
		Annotations: map[string]string{AnnotationStartedBy: c.exec.Instance}}, Spec: serverlessv1.WorkflowExecutionSpec{Workflow: "pipe"},
		Status: serverlessv1.WorkflowExecutionStatus{Phase: serverlessv1.ExecutionRunning}}
	interrupted := &serverlessv1.WorkflowExecution{ObjectMeta: metav1.ObjectMeta{Name: "interrupted", Namespace: "ns1",
		Annotations: map[string]string{AnnotationStartedBy: "node1/0123abcd"}}, Spec: serverlessv1.WorkflowExecutionSpec{Workflow: "pipe"},
		Status: serverlessv1.WorkflowExecutionStatus{Phase: serverlessv1.ExecutionRunning, Steps: []serverlessv1.WorkflowStep{{Name: "twice"}}}}
	elsewhere := &serverlessv1.WorkflowExecution{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "ns1",
		Annotations: map[string]string{AnnotationStartedBy: "node2/0123abcd"}}, Spec: serverlessv1.WorkflowExecutionSpec{Workflow: "pipe"},
		Status: serverlessv1.WorkflowExecutionStatus{Phase: serverlessv1.ExecutionRunning}}
	for _, e := range []*serverlessv1.WorkflowExecution{mine, gone, started, interrupted, elsewhere} {
		api.executions["ns1/"+e.Name] = e.DeepCopy()
		c.offer(e)
		c.offer(e) // a second notice of the same execution
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for (api.execution("by-kubectl").Status.Phase != serverlessv1.ExecutionSucceeded || api.execution("no-workflow").Status.Phase == "" ||
		api.execution("interrupted").Status.Phase != serverlessv1.ExecutionFailed) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if st := api.execution("by-kubectl").Status; st.Phase != serverlessv1.ExecutionSucceeded || st.Output.String() != `{"n":2}` || len(st.Steps) != 3 {
		t.Errorf("execution created through the API: %+v", st)
	}
	if refs := api.execution("by-kubectl").OwnerReferences; len(refs) != 1 || refs[0].UID != "u1" || refs[0].Kind != "Workflow" {
		t.Errorf("owners of the execution created through the API = %+v, want its workflow", refs)
	}
	if st := api.execution("no-workflow").Status; st.Phase != serverlessv1.ExecutionFailed || st.Error != serverlessv1.ErrorRuntime {
		t.Errorf("execution of a missing workflow: %+v", st)
	}
	if st := api.execution("by-gateway").Status; st.Phase != serverlessv1.ExecutionRunning {
		t.Errorf("an execution this instance runs was touched: %+v", st)
	}
	if st := api.execution("interrupted").Status; st.Phase != serverlessv1.ExecutionFailed || !strings.Contains(st.Cause, "interrupted") ||
		len(st.Steps) != 1 || st.CompletionTime == nil {
		t.Errorf("an execution a former instance of this host left running: %+v", st)
	}
	if st := api.execution("elsewhere").Status; st.Phase != serverlessv1.ExecutionRunning {
		t.Errorf("an execution another host runs was touched: %+v", st)
	}
	if api.patches != 4 { // Running and Succeeded, Failed, Failed
		t.Errorf("%d status writes, want 4 (each execution handled once)", api.patches)
	}
}
