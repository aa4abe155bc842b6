package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Function is Python source served behind the HTTP trigger and scaled on request counts.
type Function struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FunctionSpec   `json:"spec"`
	Status FunctionStatus `json:"status,omitempty"`
}

// FunctionSpec is what the user asks for.
type FunctionSpec struct {
	// Runtime names the language runtime; only "python3" exists today.
	Runtime string `json:"runtime,omitempty"`
	// Handler is "module.function" inside Source, e.g. "main.handle".
	Handler string `json:"handler"`
	// Source maps file names to their contents.
	Source map[string]string `json:"source"`
	// Requirements is a pip requirements file, installed into the function image.
	Requirements string `json:"requirements,omitempty"`
	// Scale bounds the autoscaler.
	Scale FunctionScale `json:"scale,omitempty"`
}

// FunctionScale bounds how many pods a function runs.
type FunctionScale struct {
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// TargetRequestsPerSecond is the request rate one pod is meant to serve.
	TargetRequestsPerSecond *int32 `json:"targetRequestsPerSecond,omitempty"`
	// IdleSeconds without requests before scaling to zero.
	IdleSeconds *int32 `json:"idleSeconds,omitempty"`
}

// FunctionStatus is what the serverless controller observed.
type FunctionStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Phase              string             `json:"phase,omitempty"`
	Image              string             `json:"image,omitempty"`
	Replicas           int32              `json:"replicas,omitempty"`
	ReadyReplicas      int32              `json:"readyReplicas,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// FunctionList is a list of Functions.
type FunctionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Function `json:"items"`
}

// Workflow chains functions as a state machine in the spirit of AWS Step Functions.
type Workflow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkflowSpec   `json:"spec"`
	Status WorkflowStatus `json:"status,omitempty"`
}

// WorkflowSpec names the first state and all states.
type WorkflowSpec struct {
	StartAt string           `json:"startAt"`
	States  map[string]State `json:"states"`
}

// StateType is one of Task, Choice, Pass, Succeed, Fail.
type StateType string

// The state types a workflow may use.
const (
	StateTask    StateType = "Task"
	StateChoice  StateType = "Choice"
	StatePass    StateType = "Pass"
	StateSucceed StateType = "Succeed"
	StateFail    StateType = "Fail"
)

// State is one step of a workflow.
type State struct {
	Type StateType `json:"type"`
	// Function names the Function a Task runs (same namespace).
	Function string `json:"function,omitempty"`
	// Next names the following state; End ends the workflow successfully.
	Next string `json:"next,omitempty"`
	End  bool   `json:"end,omitempty"`
	// Choices are tried in order by a Choice state; Default is taken when none matches.
	Choices []ChoiceRule `json:"choices,omitempty"`
	Default string       `json:"default,omitempty"`
	// Result replaces the input of a Pass state when set (JSON).
	Result *string `json:"result,omitempty"`
	// Error and Cause describe a Fail state.
	Error string `json:"error,omitempty"`
	Cause string `json:"cause,omitempty"`
}

// ChoiceRule compares one field of the input (a JSON path such as "$.n") with a value.
type ChoiceRule struct {
	Variable string `json:"variable"`
	// Exactly one comparison is set.
	NumericEquals      *float64 `json:"numericEquals,omitempty"`
	NumericLessThan    *float64 `json:"numericLessThan,omitempty"`
	NumericGreaterThan *float64 `json:"numericGreaterThan,omitempty"`
	StringEquals       *string  `json:"stringEquals,omitempty"`
	BooleanEquals      *bool    `json:"booleanEquals,omitempty"`
	Next               string   `json:"next"`
}

// WorkflowStatus is what the serverless controller observed.
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
