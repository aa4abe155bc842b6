package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/workqueue/clock"
)

// Defaults of a workflow's settings.
const (
	// DefaultTimeout bounds an execution whose workflow sets no timeoutSeconds.
	DefaultTimeout = 300 * time.Second
	// MaxTransitions bounds the states one execution (all its branches together) enters, so
	// a loop that validation allowed (it has a way out) cannot run away.
	MaxTransitions     = 10000
	defaultInterval    = time.Second
	defaultMaxAttempts = 3
	defaultBackoffRate = 2.0
)

// Interpreter runs workflow definitions. It keeps no state between executions.
type Interpreter struct {
	Invoker Invoker
	Clock   clock.Clock
}

// Outcome is how an execution ended: its output, or the error it failed with.
type Outcome struct {
	Output json.RawMessage
	Err    *Error
}

// Run executes spec in namespace with the JSON input. observe, when not nil, is called with
// every step as it finishes (from the goroutines of Parallel branches and Map items too, one
// call at a time). The execution stops at spec's timeout (DefaultTimeout without one) or when
// ctx ends.
func (in *Interpreter) Run(ctx context.Context, namespace string, spec *serverlessv1.WorkflowSpec, input []byte, observe func(serverlessv1.WorkflowStep)) Outcome {
	timeout := DefaultTimeout
	if spec.TimeoutSeconds != nil {
		timeout = time.Duration(*spec.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	deadline := in.Clock.NewTimer(timeout)
	defer deadline.Stop()
	go func() {
		select {
		case <-deadline.C():
			cancel(&Error{Name: serverlessv1.ErrorTimeout, Cause: fmt.Sprintf("the execution ran longer than %s", timeout)})
		case <-ctx.Done():
		}
	}()
	r := &run{in: in, ns: namespace, observe: observe}
	v, err := decode(input)
	if err != nil {
		return Outcome{Err: &Error{Name: serverlessv1.ErrorRuntime, Cause: "the input is not JSON: " + err.Error()}}
	}
	out, werr := r.machine(ctx, "", spec.StartAt, spec.States, v)
	if werr != nil {
		return Outcome{Err: werr}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return Outcome{Err: &Error{Name: serverlessv1.ErrorRuntime, Cause: err.Error()}}
	}
	return Outcome{Output: b}
}

// run is one execution.
type run struct {
	in      *Interpreter
	ns      string
	observe func(serverlessv1.WorkflowStep)

	mu          sync.Mutex
	transitions int
}

// decode reads JSON keeping numbers as written, so values pass through unchanged.
func decode(b []byte) (any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]any{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func decodeJSON(j *serverlessv1.JSON) (any, error) {
	if j == nil {
		return nil, nil
	}
	return decode(j.Raw)
}

// stopped is the error of an execution whose context ended: its timeout, or a cancellation.
func stopped(ctx context.Context) *Error {
	var we *Error
	if errors.As(context.Cause(ctx), &we) {
		return we
	}
	return &Error{Name: serverlessv1.ErrorTimeout, Cause: "the execution was cancelled: " + context.Cause(ctx).Error()}
}

// machine runs a state machine (the workflow's, a branch's or an item's) from startAt to its
// end. prefix names its steps in the trace.
func (r *run) machine(ctx context.Context, prefix, startAt string, states map[string]serverlessv1.State, input any) (any, *Error) {
	name := startAt
	for {
		if ctx.Err() != nil {
			return nil, stopped(ctx)
		}
		st, ok := states[name]
		if !ok {
			return nil, &Error{Name: serverlessv1.ErrorRuntime, Cause: fmt.Sprintf("no state %q", name)}
		}
		r.mu.Lock()
		r.transitions++
		n := r.transitions
		r.mu.Unlock()
		if n > MaxTransitions {
			return nil, &Error{Name: serverlessv1.ErrorRuntime, Cause: fmt.Sprintf("the execution entered more than %d states", MaxTransitions)}
		}
		start := r.in.Clock.Now()
		res := r.state(ctx, prefix+name, st, input)
		r.record(prefix+name, st.Type, input, res, start)
		if res.err != nil && !res.caught {
			return nil, res.err
		}
		if res.next == "" {
			return res.output, nil
		}
		input, name = res.output, res.next
	}
}

// result is how a state went: its output and the state to go to ("" ends the machine), or
// the error it failed with; a caught error has an output and a next state too.
type result struct {
	output   any
	next     string
	err      *Error
	caught   bool
	attempts int
}

func (r *run) record(name string, typ serverlessv1.StateType, input any, res result, start time.Time) {
	if r.observe == nil {
		return
	}
	step := serverlessv1.WorkflowStep{
		Name: name, Type: typ, Input: encodeStep(input), StartTime: metav1.NewTime(start),
		DurationMilliseconds: r.in.Clock.Since(start).Milliseconds(),
	}
	if res.attempts > 1 {
		step.Attempts = int32(res.attempts)
	}
	if res.err != nil {
		step.Error, step.Cause = res.err.Name, res.err.Cause
	}
	if res.err == nil || res.caught {
		step.Output = encodeStep(res.output)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observe(step)
}

// maxStepValue bounds a value kept in the trace: executions are objects in etcd.
const maxStepValue = 4096

func encodeStep(v any) *serverlessv1.JSON {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if len(b) > maxStepValue {
		b, _ = json.Marshal(fmt.Sprintf("(%d bytes, not kept) %s...", len(b), b[:256]))
	}
	return &serverlessv1.JSON{Raw: b}
}

// state runs one state on its raw input.
func (r *run) state(ctx context.Context, name string, st serverlessv1.State, raw any) result {
	fail := func(e *Error) result { return result{err: e} }
	if st.Type == serverlessv1.StateFail {
		n := st.Error
		if n == "" {
			n = "States.Fail"
		}
		return fail(&Error{Name: n, Cause: st.Cause})
	}
	eff, err := selectPath("inputPath", st.InputPath, raw)
	if err != nil {
		return fail(err)
	}
	if st.Parameters != nil {
		if eff, err = applyParameters(st.Parameters, eff); err != nil {
			return fail(err)
		}
	}
	next := st.Next
	var res any
	attempts := 1
	switch st.Type {
	case serverlessv1.StateSucceed:
		next, res = "", eff
	case serverlessv1.StateChoice:
		next = ""
		for _, rule := range st.Choices {
			if evaluate(rule, eff) {
				next = rule.Next
				break
			}
		}
		if next == "" {
			next = st.Default
		}
		if next == "" {
			return fail(&Error{Name: serverlessv1.ErrorNoChoiceMatched, Cause: "no rule matched and the Choice has no default"})
		}
		res = eff
	case serverlessv1.StatePass:
		res = eff
		if st.Result != nil {
			v, derr := decodeJSON(st.Result)
			if derr != nil {
				return fail(&Error{Name: serverlessv1.ErrorRuntime, Cause: "result: " + derr.Error()})
			}
			res = v
		}
	case serverlessv1.StateWait:
		if werr := r.wait(ctx, st, eff); werr != nil {
			return fail(werr)
		}
		res = eff
	case serverlessv1.StateTask, serverlessv1.StateParallel, serverlessv1.StateMap:
		var werr *Error
		res, attempts, werr = r.withRetries(ctx, st, func() (any, *Error) { return r.work(ctx, name, st, eff) })
		if werr != nil {
			if c := catcher(st.Catch, werr.Name); c != nil {
				info := map[string]any{"Error": werr.Name, "Cause": werr.Cause}
				out, perr := placePath("resultPath", c.ResultPath, raw, info)
				if perr != nil {
					return result{err: perr, attempts: attempts}
				}
				return result{output: out, next: c.Next, err: werr, caught: true, attempts: attempts}
			}
			return result{err: werr, attempts: attempts}
		}
	default:
		return fail(&Error{Name: serverlessv1.ErrorRuntime, Cause: fmt.Sprintf("unknown state type %q", st.Type)})
	}
	if st.Type == serverlessv1.StatePass || st.Type == serverlessv1.StateTask || st.Type == serverlessv1.StateParallel || st.Type == serverlessv1.StateMap {
		if res, err = placePath("resultPath", st.ResultPath, raw, res); err != nil {
			return result{err: err, attempts: attempts}
		}
	}
	out, err := selectPath("outputPath", st.OutputPath, res)
	if err != nil {
		return result{err: err, attempts: attempts}
	}
	if st.End {
		next = ""
	}
	return result{output: out, next: next, attempts: attempts}
}

// work does what a Task, Parallel or Map state does once.
func (r *run) work(ctx context.Context, name string, st serverlessv1.State, eff any) (any, *Error) {
	switch st.Type {
	case serverlessv1.StateTask:
		return r.task(ctx, st, eff)
	case serverlessv1.StateParallel:
		inputs := make([]any, len(st.Branches))
		for i := range inputs {
			inputs[i] = eff
		}
		return r.fanOut(ctx, name, inputs, len(inputs), func(i int) serverlessv1.Branch { return st.Branches[i] })
	default:
		v, err := selectPath("itemsPath", st.ItemsPath, eff)
		if err != nil {
			return nil, err
		}
		items, ok := v.([]any)
		if !ok {
			return nil, &Error{Name: serverlessv1.ErrorRuntime, Cause: fmt.Sprintf("itemsPath %s selects a %s, not an array", orRoot(st.ItemsPath), kindOf(v))}
		}
		limit := int(st.MaxConcurrency)
		if limit <= 0 {
			limit = len(items)
		}
		return r.fanOut(ctx, name, items, limit, func(int) serverlessv1.Branch { return *st.Iterator })
	}
}

// fanOut runs a branch on each input, at most limit at once, and gathers their outputs in
// order. The first failure stops the others and is the result.
func (r *run) fanOut(ctx context.Context, name string, inputs []any, limit int, branch func(i int) serverlessv1.Branch) (any, *Error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	outs := make([]any, len(inputs))
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	var once sync.Once
	var first *Error
	for i := range inputs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			b := branch(i)
			out, err := r.machine(ctx, name+"["+strconv.Itoa(i)+"].", b.StartAt, b.States, inputs[i])
			if err != nil {
				once.Do(func() {
					first = err
					cancel(errBranchFailed)
				})
				return
			}
			outs[i] = out
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if ctx.Err() != nil {
		return nil, stopped(ctx)
	}
	return outs, nil
}

var errBranchFailed = errors.New("another branch failed")

// withRetries runs do until it succeeds or no retry rule lets it try again, waiting the
// rule's interval (growing by its backoff rate) between attempts.
func (r *run) withRetries(ctx context.Context, st serverlessv1.State, do func() (any, *Error)) (any, int, *Error) {
	tries := make([]int, len(st.Retry))
	for attempt := 1; ; attempt++ {
		out, err := do()
		if err == nil {
			return out, attempt, nil
		}
		if ctx.Err() != nil {
			return nil, attempt, stopped(ctx)
		}
		i := retrier(st.Retry, err.Name)
		if i < 0 {
			return nil, attempt, err
		}
		rule := st.Retry[i]
		maxAttempts := defaultMaxAttempts
		if rule.MaxAttempts != nil {
			maxAttempts = int(*rule.MaxAttempts)
		}
		if tries[i] >= maxAttempts {
			return nil, attempt, err
		}
		delay := RetryDelay(rule, tries[i])
		tries[i]++
		if serr := r.sleep(ctx, delay); serr != nil {
			return nil, attempt, serr
		}
	}
}

// RetryDelay is the wait before retry number n (from 0) under rule: intervalSeconds times
// backoffRate to the n.
func RetryDelay(rule serverlessv1.Retry, n int) time.Duration {
	interval := defaultInterval
	if rule.IntervalSeconds != nil {
		interval = time.Duration(*rule.IntervalSeconds) * time.Second
	}
	rate := defaultBackoffRate
	if rule.BackoffRate != nil {
		rate = *rule.BackoffRate
	}
	d := float64(interval) * math.Pow(rate, float64(n))
	if d > float64(24*time.Hour) {
		return 24 * time.Hour
	}
	return time.Duration(d)
}

func retrier(rules []serverlessv1.Retry, name string) int {
	for i, r := range rules {
		if matches(r.ErrorEquals, name) {
			return i
		}
	}
	return -1
}

func catcher(rules []serverlessv1.Catch, name string) *serverlessv1.Catch {
	for i := range rules {
		if matches(rules[i].ErrorEquals, name) {
			return &rules[i]
		}
	}
	return nil
}

// sleep waits d on the interpreter's clock, or until the execution stops.
func (r *run) sleep(ctx context.Context, d time.Duration) *Error {
	if d <= 0 {
		return nil
	}
	t := r.in.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return stopped(ctx)
	}
}

// wait does a Wait state.
func (r *run) wait(ctx context.Context, st serverlessv1.State, eff any) *Error {
	var d time.Duration
	switch {
	case st.Seconds != nil:
		d = time.Duration(*st.Seconds) * time.Second
	case st.SecondsPath != "":
		v, err := selectPath("secondsPath", st.SecondsPath, eff)
		if err != nil {
			return err
		}
		f, ok := number(v)
		if !ok || f < 0 {
			return &Error{Name: serverlessv1.ErrorRuntime, Cause: fmt.Sprintf("secondsPath %s selects %s, not a number of seconds", st.SecondsPath, kindOf(v))}
		}
		d = time.Duration(f * float64(time.Second))
	default:
		ts := st.Timestamp
		if st.TimestampPath != "" {
			v, err := selectPath("timestampPath", st.TimestampPath, eff)
			if err != nil {
				return err
			}
			s, ok := v.(string)
			if !ok {
				return &Error{Name: serverlessv1.ErrorRuntime, Cause: fmt.Sprintf("timestampPath %s selects %s, not a time", st.TimestampPath, kindOf(v))}
			}
			ts = s
		}
		t, err := time.Parse(time.RFC3339, ts)
		if err != nil {
			return &Error{Name: serverlessv1.ErrorRuntime, Cause: fmt.Sprintf("timestamp %q is not an RFC 3339 time", ts)}
		}
		d = t.Sub(r.in.Clock.Now())
	}
	return r.sleep(ctx, d)
}

// errTaskTimeout ends a Task's call at its timeoutSeconds.
var errTaskTimeout = errors.New("task timeout")

// task calls the Task's function with the effective input.
func (r *run) task(ctx context.Context, st serverlessv1.State, eff any) (any, *Error) {
	body, err := json.Marshal(eff)
	if err != nil {
		return nil, &Error{Name: serverlessv1.ErrorRuntime, Cause: err.Error()}
	}
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if st.TimeoutSeconds != nil {
		t := r.in.Clock.NewTimer(time.Duration(*st.TimeoutSeconds) * time.Second)
		defer t.Stop()
		go func() {
			select {
			case <-t.C():
				cancel(errTaskTimeout)
			case <-callCtx.Done():
			}
		}()
	}
	out, err := r.in.Invoker.Invoke(callCtx, r.ns, st.Function, body)
	switch {
	case ctx.Err() != nil:
		return nil, stopped(ctx)
	case errors.Is(context.Cause(callCtx), errTaskTimeout):
		return nil, &Error{Name: serverlessv1.ErrorTimeout, Cause: fmt.Sprintf("function %s did not answer within %ds", st.Function, *st.TimeoutSeconds)}
	case err != nil:
		return nil, asError(err)
	}
	v, err := decode(out)
	if err != nil {
		return nil, &Error{Name: serverlessv1.ErrorTaskFailed, Cause: fmt.Sprintf("function %s answered with something that is not JSON: %v", st.Function, err)}
	}
	return v, nil
}
