package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/client"
)

// Labels and annotations of the executions the serverless component makes.
const (
	// LabelWorkflow names the Workflow an execution runs, to list them by workflow.
	LabelWorkflow = serverlessv1.GroupName + "/workflow"
	// AnnotationStartedBy names the instance of the serverless component that runs an
	// execution ("<host>/<random>"): the runner of executions created through the API leaves
	// it alone, and a restarted instance on the same host fails the ones it was running.
	AnnotationStartedBy = serverlessv1.GroupName + "/started-by"
)

// API is what executions need from the apiserver.
type API interface {
	GetWorkflow(ctx context.Context, namespace, name string) (*serverlessv1.Workflow, error)
	CreateExecution(ctx context.Context, e *serverlessv1.WorkflowExecution) (*serverlessv1.WorkflowExecution, error)
	// PatchExecutionStatus applies a JSON merge patch to an execution's status subresource.
	PatchExecutionStatus(ctx context.Context, namespace, name string, patch []byte) error
	// PatchExecution applies a JSON merge patch to an execution (its metadata).
	PatchExecution(ctx context.Context, namespace, name string, patch []byte) error
}

// ClientAPI is API through the apiserver.
func ClientAPI(c *client.Client) API {
	return clientAPI{
		workflows:  client.MustFor[*serverlessv1.Workflow, *serverlessv1.WorkflowList](c),
		executions: client.MustFor[*serverlessv1.WorkflowExecution, *serverlessv1.WorkflowExecutionList](c),
	}
}

type clientAPI struct {
	workflows  *client.Typed[*serverlessv1.Workflow, *serverlessv1.WorkflowList]
	executions *client.Typed[*serverlessv1.WorkflowExecution, *serverlessv1.WorkflowExecutionList]
}

func (a clientAPI) GetWorkflow(ctx context.Context, namespace, name string) (*serverlessv1.Workflow, error) {
	return a.workflows.Get(ctx, namespace, name, metav1.GetOptions{})
}

func (a clientAPI) CreateExecution(ctx context.Context, e *serverlessv1.WorkflowExecution) (*serverlessv1.WorkflowExecution, error) {
	return a.executions.Create(ctx, e, metav1.CreateOptions{})
}

func (a clientAPI) PatchExecution(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := a.executions.Patch(ctx, namespace, name, types.MergePatchType, patch)
	return err
}

func (a clientAPI) PatchExecutionStatus(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := a.executions.Patch(ctx, namespace, name, types.MergePatchType, patch, "status")
	return err
}

// Executor runs executions and records them as WorkflowExecutions.
type Executor struct {
	Interpreter *Interpreter
	API         API
	Logger      *slog.Logger
	// MaxSteps bounds the steps kept in an execution's status; the rest are counted
	// (default 200).
	MaxSteps int
	// WriteTimeout bounds each write of an execution (default 10 s).
	WriteTimeout time.Duration
	// Instance names this instance of the serverless component in the executions it starts.
	Instance string
	// ProgressInterval is how often the steps of a running execution are written (default 2 s).
	ProgressInterval time.Duration
}

func (x *Executor) progressInterval() time.Duration {
	if x.ProgressInterval > 0 {
		return x.ProgressInterval
	}
	return 2 * time.Second
}

// NewExecution is the execution object of a run of wf with input, owned by wf.
func NewExecution(wf *serverlessv1.Workflow, input []byte) *serverlessv1.WorkflowExecution {
	e := &serverlessv1.WorkflowExecution{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    wf.Name + "-",
			Namespace:       wf.Namespace,
			Labels:          map[string]string{LabelWorkflow: wf.Name},
			OwnerReferences: []metav1.OwnerReference{ownerOf(wf)},
		},
		Spec: serverlessv1.WorkflowExecutionSpec{Workflow: wf.Name},
	}
	var buf bytes.Buffer
	if json.Compact(&buf, input) == nil && buf.Len() > 0 {
		e.Spec.Input = &serverlessv1.JSON{Raw: buf.Bytes()}
	}
	return e
}

// Start creates the execution of wf on input, marked as run here, and returns it.
func (x *Executor) Start(ctx context.Context, wf *serverlessv1.Workflow, input []byte) (*serverlessv1.WorkflowExecution, error) {
	e := NewExecution(wf, input)
	e.Annotations = map[string]string{AnnotationStartedBy: x.Instance}
	wctx, cancel := context.WithTimeout(ctx, x.writeTimeout())
	defer cancel()
	created, err := x.API.CreateExecution(wctx, e)
	if err != nil {
		return nil, fmt.Errorf("create the execution of workflow %s/%s: %w", wf.Namespace, wf.Name, err)
	}
	return created, nil
}

func (x *Executor) writeTimeout() time.Duration {
	if x.WriteTimeout > 0 {
		return x.WriteTimeout
	}
	return 10 * time.Second
}

// Run runs the execution e of wf on input and records its status: Running with the start
// time, then how it ended with the trace. The recording is best effort: a failed write is
// logged, and the outcome is returned all the same.
func (x *Executor) Run(ctx context.Context, wf *serverlessv1.Workflow, e *serverlessv1.WorkflowExecution, input []byte) Outcome {
	log := x.Logger
	if log == nil {
		log = slog.Default()
	}
	start := x.Interpreter.Clock.Now()
	x.patch(ctx, log, e, serverlessv1.WorkflowExecutionStatus{
		Phase: serverlessv1.ExecutionRunning, StartTime: ptr.To(metav1.NewTime(start)), WorkflowGeneration: wf.Generation,
	})
	maxSteps := x.MaxSteps
	if maxSteps <= 0 {
		maxSteps = 200
	}
	var mu sync.Mutex
	var steps []serverlessv1.WorkflowStep
	omitted := int32(0)
	// While it runs, the steps so far are written every ProgressInterval, so a long execution
	// (waits, retries) shows where it is.
	progressDone := make(chan struct{})
	stopProgress := make(chan struct{})
	go func() {
		defer close(progressDone)
		written := 0
		for {
			t := x.Interpreter.Clock.NewTimer(x.progressInterval())
			select {
			case <-stopProgress:
				t.Stop()
				return
			case <-t.C():
			}
			mu.Lock()
			n := len(steps) + int(omitted)
			snapshot := append([]serverlessv1.WorkflowStep(nil), steps...)
			skipped := omitted
			mu.Unlock()
			if n == written {
				continue
			}
			written = n
			x.patch(ctx, log, e, serverlessv1.WorkflowExecutionStatus{
				Phase: serverlessv1.ExecutionRunning, StartTime: ptr.To(metav1.NewTime(start)), WorkflowGeneration: wf.Generation,
				Steps: snapshot, StepsOmitted: skipped,
			})
		}
	}()
	out := x.Interpreter.Run(ctx, wf.Namespace, &wf.Spec, input, func(s serverlessv1.WorkflowStep) {
		mu.Lock()
		defer mu.Unlock()
		if len(steps) < maxSteps {
			steps = append(steps, s)
		} else {
			omitted++
		}
	})
	close(stopProgress)
	<-progressDone
	st := serverlessv1.WorkflowExecutionStatus{
		Phase: serverlessv1.ExecutionSucceeded, StartTime: ptr.To(metav1.NewTime(start)),
		CompletionTime: ptr.To(metav1.NewTime(x.Interpreter.Clock.Now())), WorkflowGeneration: wf.Generation,
		Steps: steps, StepsOmitted: omitted,
	}
	st.DurationMilliseconds = max(x.Interpreter.Clock.Since(start).Milliseconds(), 1)
	if out.Err != nil {
		st.Phase, st.Error, st.Cause = serverlessv1.ExecutionFailed, out.Err.Name, out.Err.Cause
	} else {
		st.Output = &serverlessv1.JSON{Raw: out.Output}
		if len(out.Output) > maxFunctionOutput {
			st.Output = encodeStep(json.RawMessage(out.Output))
		}
	}
	// The caller may have gone; the record is still due.
	x.patch(context.WithoutCancel(ctx), log, e, st)
	return out
}

// maxFunctionOutput bounds the output kept in an execution's status.
const maxFunctionOutput = 64 << 10

func (x *Executor) patch(ctx context.Context, log *slog.Logger, e *serverlessv1.WorkflowExecution, st serverlessv1.WorkflowExecutionStatus) {
	body, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		log.Error("encode execution status", "execution", e.Namespace+"/"+e.Name, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, x.writeTimeout())
	defer cancel()
	if err := x.API.PatchExecutionStatus(ctx, e.Namespace, e.Name, body); err != nil {
		log.Error("record execution status", "execution", e.Namespace+"/"+e.Name, "phase", st.Phase, "err", err)
	}
}

func timePtr(t time.Time) *metav1.Time {
	m := metav1.NewTime(t)
	return &m
}

// ownerOf is the owner reference of an execution to its workflow: deleting the workflow
// deletes its executions.
func ownerOf(wf *serverlessv1.Workflow) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: serverlessv1.SchemeGroupVersion.String(), Kind: "Workflow", Name: wf.Name, UID: wf.UID,
		BlockOwnerDeletion: ptr.To(true),
	}
}
