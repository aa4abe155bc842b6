package v1

import (
	corev1 "k8s.io/api/core/v1"
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
	// Handler is "module.function" inside Source, e.g. "main.handle". The runtime calls it
	// with the request's JSON body (decoded) and answers with what it returns (encoded).
	Handler string `json:"handler"`
	// Source maps file names (relative paths) to their contents.
	Source map[string]string `json:"source,omitempty"`
	// SourcePath names a local file or folder, relative to the manifest, that minik8s's kubectl
	// packs into Source before sending; the API never stores it.
	SourcePath string `json:"sourcePath,omitempty"`
	// Requirements is a pip requirements file, installed into the function image.
	Requirements string `json:"requirements,omitempty"`
	// Scale bounds and tunes the autoscaler.
	Scale FunctionScale `json:"scale,omitempty"`
	// TimeoutSeconds bounds one call; the gateway answers 504 after it (default 30).
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// Resources of the function's container.
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Env is set in the function's container.
	Env []corev1.EnvVar `json:"env,omitempty"`
	// Schedules call the function on cron schedules.
	Schedules []FunctionSchedule `json:"schedules,omitempty"`
}

// FunctionScale bounds how many pods a function runs and how the autoscaler follows load.
type FunctionScale struct {
	// MinReplicas is the floor (default 0: the function scales to zero when idle).
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the ceiling (default 10).
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// TargetConcurrency is the number of in-flight calls one pod is meant to serve; replicas
	// follow the in-flight calls averaged over the stable window divided by it (default 10).
	TargetConcurrency *int32 `json:"targetConcurrency,omitempty"`
	// TargetRequestsPerSecond is the call rate one pod is meant to serve; when set, replicas
	// also follow the rate (the larger of the two answers wins).
	TargetRequestsPerSecond *int32 `json:"targetRequestsPerSecond,omitempty"`
	// ContainerConcurrency is the most calls one pod gets at once; more wait at the gateway
	// (0, the default: no limit).
	ContainerConcurrency *int32 `json:"containerConcurrency,omitempty"`
	// MaxQueue is how many calls may wait at the gateway for a free pod before it answers 429
	// (default 100).
	MaxQueue *int32 `json:"maxQueue,omitempty"`
	// StableWindowSeconds is the window the autoscaler averages over (default 60); the panic
	// window is a tenth of it.
	StableWindowSeconds *int32 `json:"stableWindowSeconds,omitempty"`
	// IdleSeconds without calls before scaling to zero (default 60).
	IdleSeconds *int32 `json:"idleSeconds,omitempty"`
}

// FunctionSchedule calls the function on a cron schedule.
type FunctionSchedule struct {
	// Name identifies the schedule in status and events.
	Name string `json:"name"`
	// Schedule is a five-field cron expression ("*/5 * * * *") or a descriptor such as "@every 30s".
	Schedule string `json:"schedule"`
	// Input is the JSON body of each call (default {}).
	Input string `json:"input,omitempty"`
}

// FunctionStatus is what the serverless component observed.
type FunctionStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is Building, Ready or Failed.
	Phase string `json:"phase,omitempty"`
	// Version counts the function's distinct sources: it grows by one each time the runtime,
	// handler, source or requirements change.
	Version int64 `json:"version,omitempty"`
	// SourceHash identifies the source of Version.
	SourceHash string `json:"sourceHash,omitempty"`
	// Image is the image built for Version.
	Image string `json:"image,omitempty"`
	// Build is the last image build.
	Build *FunctionBuild `json:"build,omitempty"`
	// DesiredReplicas is what the autoscaler asks for; Replicas and ReadyReplicas what runs.
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`
	Replicas        int32 `json:"replicas,omitempty"`
	ReadyReplicas   int32 `json:"readyReplicas,omitempty"`
	// LastCallTime is when the gateway last took a call of the function.
	LastCallTime *metav1.Time `json:"lastCallTime,omitempty"`
	// Schedules reports each schedule's last call.
	Schedules  []FunctionScheduleStatus `json:"schedules,omitempty"`
	Conditions []metav1.Condition       `json:"conditions,omitempty"`
}

// FunctionBuild describes an image build of one version.
type FunctionBuild struct {
	Version        int64        `json:"version"`
	SourceHash     string       `json:"sourceHash,omitempty"`
	Phase          string       `json:"phase"` // Running, Succeeded or Failed
	Message        string       `json:"message,omitempty"`
	StartTime      *metav1.Time `json:"startTime,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Log is the tail of the build's output.
	Log string `json:"log,omitempty"`
}

// FunctionScheduleStatus is the last call a schedule made.
type FunctionScheduleStatus struct {
	Name             string       `json:"name"`
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastResult is Succeeded or the error of the last call.
	LastResult string `json:"lastResult,omitempty"`
}

// FunctionList is a list of Functions.
type FunctionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Function `json:"items"`
}
