package v1

import (
	"bytes"
	"encoding/json"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Workflow chains functions as a state machine in the spirit of AWS Step Functions' language:
// each state takes the JSON its predecessor produced and hands on what it produces.
type Workflow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkflowSpec   `json:"spec"`
	Status WorkflowStatus `json:"status,omitempty"`
}

// WorkflowSpec names the first state and all states.
type WorkflowSpec struct {
	// Comment describes the workflow.
	Comment string `json:"comment,omitempty"`
	// StartAt names the state an execution begins with.
	StartAt string `json:"startAt"`
	// States maps state names to states.
	States map[string]State `json:"states"`
	// TimeoutSeconds bounds a whole execution; it fails with States.Timeout after it
	// (default 300).
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// StateType is the kind of a state.
type StateType string

// The state types a workflow may use.
const (
	// StateTask calls a Function with the state's input and takes its answer as the result.
	StateTask StateType = "Task"
	// StateChoice picks the next state by rules on its input.
	StateChoice StateType = "Choice"
	// StatePass hands on its input, or a fixed result.
	StatePass StateType = "Pass"
	// StateWait pauses for some seconds or until a time.
	StateWait StateType = "Wait"
	// StateSucceed ends the execution (or its branch) successfully.
	StateSucceed StateType = "Succeed"
	// StateFail ends the execution with an error and a cause.
	StateFail StateType = "Fail"
	// StateParallel runs several branches on the same input; the result is their outputs in order.
	StateParallel StateType = "Parallel"
	// StateMap runs its iterator on every item of an array; the result is their outputs in order.
	StateMap StateType = "Map"
)

// The error names a workflow reports and retry and catch rules match, besides the exception
// type a function's handler raised (for example "ValueError").
const (
	// ErrorAll matches any error in errorEquals; it must be the only entry of the last rule.
	ErrorAll = "States.ALL"
	// ErrorTaskFailed is a Task whose function could not answer (unknown, unreachable, 4xx/5xx
	// other than the handler raising).
	ErrorTaskFailed = "States.TaskFailed"
	// ErrorTimeout is a Task or an execution that ran past its timeoutSeconds.
	ErrorTimeout = "States.Timeout"
	// ErrorRuntime is a state whose input, paths or rules do not fit the data it got (a path
	// that selects nothing, a Map whose items are not an array, ...).
	ErrorRuntime = "States.Runtime"
	// ErrorBranchFailed is a Parallel or Map branch that failed without a more precise name.
	ErrorBranchFailed = "States.BranchFailed"
	// ErrorNoChoiceMatched is a Choice state with no matching rule and no default.
	ErrorNoChoiceMatched = "States.NoChoiceMatched"
)

// Branch is a state machine of its own, run by a Parallel state (each of its branches) or a
// Map state (for every item).
type Branch struct {
	StartAt string           `json:"startAt"`
	States  map[string]State `json:"states"`
}

// State is one step of a workflow. Type says which of the fields apply.
type State struct {
	Type StateType `json:"type"`
	// Comment describes the state.
	Comment string `json:"comment,omitempty"`
	// Next names the following state; End ends the workflow (or branch) with this state's output.
	// Task, Pass, Wait, Parallel and Map take exactly one of them.
	Next string `json:"next,omitempty"`
	End  bool   `json:"end,omitempty"`

	// InputPath selects the part of the input the state works on (default "$", all of it).
	InputPath string `json:"inputPath,omitempty"`
	// Parameters, for Task, Pass and Parallel, builds the effective input from a template:
	// a key ending in ".$" takes the value its path selects from the input, under the key
	// without the suffix; other values are copied.
	Parameters *JSON `json:"parameters,omitempty"`
	// ResultPath places the result in the input (default "$": the result replaces the input).
	ResultPath string `json:"resultPath,omitempty"`
	// OutputPath selects the part of that which goes to the next state (default "$").
	OutputPath string `json:"outputPath,omitempty"`

	// Function names the Function a Task calls (same namespace).
	Function string `json:"function,omitempty"`
	// TimeoutSeconds bounds each call of a Task (default: the function's own timeout).
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// Retry, for Task, Parallel and Map, tries the state again on the errors it names.
	Retry []Retry `json:"retry,omitempty"`
	// Catch, for Task, Parallel and Map, goes to another state on the errors it names once the
	// retries are spent.
	Catch []Catch `json:"catch,omitempty"`

	// Choices are tried in order by a Choice state; Default is taken when none matches
	// (without one, no match fails the execution with States.NoChoiceMatched).
	Choices []ChoiceRule `json:"choices,omitempty"`
	Default string       `json:"default,omitempty"`

	// Result is what a Pass state produces (default: its input).
	Result *JSON `json:"result,omitempty"`

	// A Wait state waits Seconds, the number SecondsPath selects, until Timestamp (RFC 3339),
	// or until the time TimestampPath selects; exactly one is set.
	Seconds       *int32 `json:"seconds,omitempty"`
	SecondsPath   string `json:"secondsPath,omitempty"`
	Timestamp     string `json:"timestamp,omitempty"`
	TimestampPath string `json:"timestampPath,omitempty"`

	// Error and Cause describe how a Fail state fails.
	Error string `json:"error,omitempty"`
	Cause string `json:"cause,omitempty"`

	// Branches a Parallel state runs at once.
	Branches []Branch `json:"branches,omitempty"`

	// ItemsPath selects the array a Map state iterates (default "$").
	ItemsPath string `json:"itemsPath,omitempty"`
	// Iterator is run by a Map state on every item.
	Iterator *Branch `json:"iterator,omitempty"`
	// MaxConcurrency bounds how many items a Map state runs at once (0, the default: all).
	MaxConcurrency int32 `json:"maxConcurrency,omitempty"`
}

// Retry tries a failed state again.
type Retry struct {
	// ErrorEquals names the errors the rule applies to ("States.ALL" for any).
	ErrorEquals []string `json:"errorEquals"`
	// IntervalSeconds before the first retry (default 1).
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty"`
	// MaxAttempts is how many retries at most (default 3; 0 never retries).
	MaxAttempts *int32 `json:"maxAttempts,omitempty"`
	// BackoffRate multiplies the interval after each retry (default 2.0, at least 1).
	BackoffRate *float64 `json:"backoffRate,omitempty"`
}

// Catch moves on to another state when a state failed.
type Catch struct {
	// ErrorEquals names the errors the rule applies to ("States.ALL" for any).
	ErrorEquals []string `json:"errorEquals"`
	// Next names the state to go to.
	Next string `json:"next"`
	// ResultPath places {"Error": ..., "Cause": ...} in the state's input to make the next
	// state's input (default "$": it replaces the input).
	ResultPath string `json:"resultPath,omitempty"`
}

// ChoiceRule is a test on the input. A top-level rule of a Choice state has Next; rules
// inside And, Or and Not have none. Exactly one of the comparisons or combinators is set.
type ChoiceRule struct {
	// Variable is the JSON path of the value compared, e.g. "$.n".
	Variable string `json:"variable,omitempty"`

	NumericEquals            *float64 `json:"numericEquals,omitempty"`
	NumericLessThan          *float64 `json:"numericLessThan,omitempty"`
	NumericGreaterThan       *float64 `json:"numericGreaterThan,omitempty"`
	NumericLessThanEquals    *float64 `json:"numericLessThanEquals,omitempty"`
	NumericGreaterThanEquals *float64 `json:"numericGreaterThanEquals,omitempty"`
	StringEquals             *string  `json:"stringEquals,omitempty"`
	StringLessThan           *string  `json:"stringLessThan,omitempty"`
	StringGreaterThan        *string  `json:"stringGreaterThan,omitempty"`
	StringLessThanEquals     *string  `json:"stringLessThanEquals,omitempty"`
	StringGreaterThanEquals  *string  `json:"stringGreaterThanEquals,omitempty"`
	BooleanEquals            *bool    `json:"booleanEquals,omitempty"`
	// IsPresent tests whether the variable selects anything; IsNull whether it is null.
	IsPresent *bool `json:"isPresent,omitempty"`
	IsNull    *bool `json:"isNull,omitempty"`

	// And matches when all of its rules do, Or when one does, Not when its rule does not.
	And []ChoiceRule `json:"and,omitempty"`
	Or  []ChoiceRule `json:"or,omitempty"`
	Not *ChoiceRule  `json:"not,omitempty"`

	// Next names the state a matching top-level rule goes to.
	Next string `json:"next,omitempty"`
}

// WorkflowStatus is what the serverless component observed.
type WorkflowStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// WorkflowList is a list of Workflows.
type WorkflowList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Workflow `json:"items"`
}

// WorkflowExecution is one run of a Workflow with its per-step trace. The serverless gateway
// makes one for every POST /workflow/<ns>/<name>; one created with only a spec is run by the
// serverless component. It is owned by its Workflow.
type WorkflowExecution struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkflowExecutionSpec   `json:"spec"`
	Status WorkflowExecutionStatus `json:"status,omitempty"`
}

// WorkflowExecutionSpec names the workflow and its input.
type WorkflowExecutionSpec struct {
	// Workflow names the Workflow run (same namespace).
	Workflow string `json:"workflow"`
	// Input is the execution's input (default {}).
	Input *JSON `json:"input,omitempty"`
}

// The phases of a WorkflowExecution.
const (
	ExecutionRunning   = "Running"
	ExecutionSucceeded = "Succeeded"
	ExecutionFailed    = "Failed"
)

// WorkflowExecutionStatus is how the execution went.
type WorkflowExecutionStatus struct {
	// Phase is Running, Succeeded or Failed.
	Phase          string       `json:"phase,omitempty"`
	StartTime      *metav1.Time `json:"startTime,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// DurationMilliseconds is how long a finished execution took (the times above are in
	// seconds; most executions take less than one).
	DurationMilliseconds int64 `json:"durationMilliseconds,omitempty"`
	// WorkflowGeneration is the generation of the Workflow's spec that ran.
	WorkflowGeneration int64 `json:"workflowGeneration,omitempty"`
	// Output is the final output of a Succeeded execution.
	Output *JSON `json:"output,omitempty"`
	// Error and Cause say why a Failed execution failed.
	Error string `json:"error,omitempty"`
	Cause string `json:"cause,omitempty"`
	// Steps is the trace, one entry per state entered, in the order they finished (states of
	// Parallel branches and Map iterations are named "<state>[<index>].<inner state>").
	Steps []WorkflowStep `json:"steps,omitempty"`
	// StepsOmitted counts the steps left out of Steps to keep the object small.
	StepsOmitted int32 `json:"stepsOmitted,omitempty"`
}

// WorkflowStep is one state entered by an execution.
type WorkflowStep struct {
	Name  string    `json:"name"`
	Type  StateType `json:"type"`
	Input *JSON     `json:"input,omitempty"`
	// Output is what the state handed on (absent when it failed).
	Output *JSON `json:"output,omitempty"`
	// Error and Cause describe a failure, caught or not.
	Error string `json:"error,omitempty"`
	Cause string `json:"cause,omitempty"`
	// Attempts counts the calls of a retried Task, Parallel or Map (1 without retries).
	Attempts             int32       `json:"attempts,omitempty"`
	StartTime            metav1.Time `json:"startTime"`
	DurationMilliseconds int64       `json:"durationMilliseconds"`
}

// WorkflowExecutionList is a list of WorkflowExecutions.
type WorkflowExecutionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkflowExecution `json:"items"`
}

// JSON is any JSON value kept as its encoding (an object, an array, a string, a number, a
// boolean or null), so manifests write it as YAML rather than as a quoted string.
type JSON struct {
	Raw []byte `json:"-"`
}

// NewJSON returns the JSON encoding of raw, which must be valid JSON.
func NewJSON(raw []byte) *JSON { return &JSON{Raw: append([]byte(nil), raw...)} }

// MarshalJSON writes the value; an empty one is null.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j.Raw) == 0 {
		return []byte("null"), nil
	}
	return j.Raw, nil
}

// UnmarshalJSON keeps a compact copy of the value.
func (j *JSON) UnmarshalJSON(data []byte) error {
	if j == nil {
		return errors.New("serverless/v1.JSON: UnmarshalJSON on nil pointer")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return err
	}
	j.Raw = buf.Bytes()
	return nil
}

// String is the JSON text.
func (j *JSON) String() string {
	if j == nil || len(j.Raw) == 0 {
		return "null"
	}
	return string(j.Raw)
}

// OpenAPISchemaType is empty: the value may be of any JSON type.
func (JSON) OpenAPISchemaType() []string { return nil }

// OpenAPISchemaFormat is empty.
func (JSON) OpenAPISchemaFormat() string { return "" }
