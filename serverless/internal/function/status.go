package function

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// Phases of a Function and of its builds.
const (
	PhaseBuilding = "Building"
	PhaseReady    = "Ready"
	PhaseFailed   = "Failed"

	BuildRunning   = "Running"
	BuildSucceeded = "Succeeded"
	BuildFailed    = "Failed"
)

// Condition types the controller sets.
const (
	ConditionBuilt = "Built"
	ConditionReady = "Ready"
)

// BuildOutcome is how a build of one version ended.
type BuildOutcome struct {
	Version    int64
	SourceHash string
	Image      string
	Log        string
	// Err is nil when the image was built and put on the nodes.
	Err error
}

// StartBuild records in st that version is being built from hash, the next version after
// anything st has seen. It returns the version.
func StartBuild(st *serverlessv1.FunctionStatus, hash string, now time.Time) int64 {
	v := st.Version
	if st.Build != nil && st.Build.Version > v {
		v = st.Build.Version
	}
	v++
	st.Version, st.SourceHash = v, hash
	t := metav1.NewTime(now)
	st.Build = &serverlessv1.FunctionBuild{Version: v, SourceHash: hash, Phase: BuildRunning, StartTime: &t}
	return v
}

// FinishBuild records the outcome of the running build in st and reports whether it was the
// build st waits for (an outcome of an older build, overtaken by a newer source, is not).
func FinishBuild(st *serverlessv1.FunctionStatus, out BuildOutcome, now time.Time) bool {
	b := st.Build
	if b == nil || b.Phase != BuildRunning || b.Version != out.Version || b.SourceHash != out.SourceHash {
		return false
	}
	t := metav1.NewTime(now)
	b.CompletionTime = &t
	b.Log = tail(out.Log, 2048)
	if out.Err != nil {
		b.Phase, b.Message = BuildFailed, out.Err.Error()
		return true
	}
	b.Phase, b.Message = BuildSucceeded, ""
	st.Image = out.Image
	return true
}

// Observe fills in what the controller reports beside builds: observedGeneration, the pods
// of the Deployment, the phase and the conditions.
func Observe(fn *serverlessv1.Function, st *serverlessv1.FunctionStatus, dep *appsv1.Deployment, now time.Time) {
	st.ObservedGeneration = fn.Generation
	st.Replicas, st.ReadyReplicas = 0, 0
	if dep != nil {
		st.Replicas, st.ReadyReplicas = dep.Status.Replicas, dep.Status.ReadyReplicas
	}
	serving := ImageVersion(st.Image)
	deployed := DeployedVersion(dep)
	b := st.Build
	switch {
	case b == nil || b.Phase == BuildRunning:
		st.Phase = PhaseBuilding
	case b.Phase == BuildFailed:
		st.Phase = PhaseFailed
	default:
		st.Phase = PhaseReady
	}
	switch {
	case b == nil:
		setCondition(st, ConditionBuilt, metav1.ConditionFalse, "Pending", "no build yet", fn.Generation, now)
	case b.Phase == BuildRunning:
		setCondition(st, ConditionBuilt, metav1.ConditionFalse, "Building", fmt.Sprintf("building version %d", b.Version), fn.Generation, now)
	case b.Phase == BuildFailed:
		setCondition(st, ConditionBuilt, metav1.ConditionFalse, "BuildFailed", fmt.Sprintf("version %d: %s", b.Version, b.Message), fn.Generation, now)
	default:
		setCondition(st, ConditionBuilt, metav1.ConditionTrue, "Built", fmt.Sprintf("version %d built as %s", b.Version, st.Image), fn.Generation, now)
	}
	switch {
	case serving == 0:
		setCondition(st, ConditionReady, metav1.ConditionFalse, "NoImage", "no version has been built yet", fn.Generation, now)
	case dep == nil || deployed != serving:
		setCondition(st, ConditionReady, metav1.ConditionFalse, "Deploying", fmt.Sprintf("deploying version %d", serving), fn.Generation, now)
	case !RolledOut(dep):
		setCondition(st, ConditionReady, metav1.ConditionFalse, "RollingOut", fmt.Sprintf("rolling out version %d", serving), fn.Generation, now)
	default:
		setCondition(st, ConditionReady, metav1.ConditionTrue, "Serving", fmt.Sprintf("version %d serves calls", serving), fn.Generation, now)
	}
}

// ImageVersion is the version in a function image's tag (0 for none).
func ImageVersion(image string) int64 {
	_, _, v, _ := ParseImage(image)
	return v
}

func setCondition(st *serverlessv1.FunctionStatus, typ string, status metav1.ConditionStatus, reason, msg string, gen int64, now time.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != typ {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message, c.ObservedGeneration = status, reason, msg, gen
		return
	}
	st.Conditions = append(st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now)})
}

// StatusPatch is the JSON merge patch that brings the fields the controller owns from old to
// new, and false when they are equal. Fields are written whatever their value (a zero
// readyReplicas must clear the old count); the autoscaler's fields are left alone. The patch
// carries resourceVersion, the version old was read at, as a precondition: a status computed
// from a stale cache is refused (Conflict) rather than written over newer news.
func StatusPatch(resourceVersion string, old, new *serverlessv1.FunctionStatus) ([]byte, bool) {
	type owned struct {
		ObservedGeneration int64                       `json:"observedGeneration"`
		Phase              string                      `json:"phase"`
		Version            int64                       `json:"version"`
		SourceHash         string                      `json:"sourceHash"`
		Image              string                      `json:"image"`
		Build              *serverlessv1.FunctionBuild `json:"build"`
		Replicas           int32                       `json:"replicas"`
		ReadyReplicas      int32                       `json:"readyReplicas"`
		Conditions         []metav1.Condition          `json:"conditions"`
	}
	pick := func(s *serverlessv1.FunctionStatus) owned {
		return owned{s.ObservedGeneration, s.Phase, s.Version, s.SourceHash, s.Image, s.Build, s.Replicas, s.ReadyReplicas, s.Conditions}
	}
	o, n := pick(old), pick(new)
	if reflect.DeepEqual(o, n) {
		return nil, false
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]string{"resourceVersion": resourceVersion}, "status": n})
	return b, true
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
