package workflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/workqueue/clock"
)

// Config wires the workflow part of the serverless component.
type Config struct {
	API API
	// Invoker calls functions the way POST /function does (the gateway).
	Invoker Invoker
	// Executions, when set, is an informer of WorkflowExecutions: the ones created through the
	// API with only a spec are run.
	Executions *informer.Informer
	// MaxRunning bounds the executions created through the API that run at once (default 16).
	MaxRunning int
	// Host names this host; executions a former instance on it left running are failed
	// (default: the hostname).
	Host   string
	Clock  clock.Clock
	Logger *slog.Logger
}

// Component serves POST /workflow and runs executions created through the API.
type Component struct {
	exec   *Executor
	cfg    Config
	log    *slog.Logger
	queue  chan *serverlessv1.WorkflowExecution
	mu     sync.Mutex
	queued map[string]bool
}

// New returns the workflow component. It does no I/O.
func New(cfg Config) *Component {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = 16
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	c := &Component{
		exec: &Executor{Interpreter: &Interpreter{Invoker: cfg.Invoker, Clock: cfg.Clock}, API: cfg.API, Logger: cfg.Logger,
			Instance: cfg.Host + "/" + randomID()},
		cfg:    cfg,
		log:    cfg.Logger,
		queue:  make(chan *serverlessv1.WorkflowExecution, 1024),
		queued: map[string]bool{},
	}
	if cfg.Executions != nil {
		cfg.Executions.AddEventHandler(informer.HandlerFuncs{
			AddFunc:    c.offer,
			UpdateFunc: func(_, obj runtime.Object) { c.offer(obj) },
		})
	}
	return c
}

// Handler serves POST /workflow/<namespace>/<name>.
func (c *Component) Handler() http.Handler { return Handler(c.exec) }

// offer queues an execution nobody runs: one created through the API with no phase yet, or
// one a former instance of this host was running when it stopped.
func (c *Component) offer(obj runtime.Object) {
	e, ok := obj.(*serverlessv1.WorkflowExecution)
	if !ok || e.DeletionTimestamp != nil {
		return
	}
	by := e.Annotations[AnnotationStartedBy]
	switch {
	case by == "" && e.Status.Phase == "":
	case by != "" && by != c.exec.Instance && strings.HasPrefix(by, c.cfg.Host+"/") &&
		(e.Status.Phase == "" || e.Status.Phase == serverlessv1.ExecutionRunning):
	default:
		return
	}
	key := e.Namespace + "/" + e.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queued[key] {
		return
	}
	select {
	case c.queue <- e.DeepCopy():
		c.queued[key] = true
	default:
		c.log.Warn("too many executions waiting; this one waits for the next resync", "execution", key)
	}
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Start runs executions created through the API until ctx ends, then waits for those under
// way.
func (c *Component) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range c.cfg.MaxRunning {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case e := <-c.queue:
					c.runQueued(ctx, e)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

func (c *Component) runQueued(ctx context.Context, e *serverlessv1.WorkflowExecution) {
	if by := e.Annotations[AnnotationStartedBy]; by != "" {
		// A former instance on this host stopped while running it: its calls are gone.
		now := c.cfg.Clock.Now()
		st := &serverlessv1.WorkflowExecutionStatus{}
		e.Status.DeepCopyInto(st)
		st.Phase, st.Error = serverlessv1.ExecutionFailed, serverlessv1.ErrorRuntime
		st.Cause = fmt.Sprintf("interrupted: the serverless component that ran it (%s) stopped", by)
		st.CompletionTime = timePtr(now)
		if st.StartTime == nil {
			st.StartTime = timePtr(now)
		}
		c.log.Info("failing an interrupted execution", "execution", e.Namespace+"/"+e.Name, "startedBy", by)
		c.exec.patch(ctx, c.log, e, *st)
		return
	}
	var input []byte
	if e.Spec.Input != nil {
		input = e.Spec.Input.Raw
	}
	wf, err := c.cfg.API.GetWorkflow(ctx, e.Namespace, e.Spec.Workflow)
	if err != nil {
		c.log.Info("execution of an unreadable workflow", "execution", e.Namespace+"/"+e.Name, "err", err)
		now := c.cfg.Clock.Now()
		st := serverlessv1.WorkflowExecutionStatus{Phase: serverlessv1.ExecutionFailed, Error: serverlessv1.ErrorRuntime,
			Cause: fmt.Sprintf("read workflow %s: %v", e.Spec.Workflow, err)}
		st.StartTime, st.CompletionTime = timePtr(now), timePtr(now)
		c.exec.patch(ctx, c.log, e, st)
		return
	}
	if len(e.OwnerReferences) == 0 {
		// Executions created through the API belong to their workflow too.
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"ownerReferences": []metav1.OwnerReference{ownerOf(wf)},
			"labels":          map[string]string{LabelWorkflow: wf.Name},
		}})
		if err := c.cfg.API.PatchExecution(ctx, e.Namespace, e.Name, patch); err != nil {
			c.log.Info("cannot make the workflow own an execution", "execution", e.Namespace+"/"+e.Name, "err", err)
		}
	}
	if _, err := decode(input); err != nil {
		b, _ := json.Marshal(err.Error())
		input = b
	}
	out := c.exec.Run(ctx, wf, e, input)
	c.log.Debug("ran execution", "execution", e.Namespace+"/"+e.Name, "failed", out.Err != nil)
}
