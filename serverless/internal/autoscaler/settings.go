package autoscaler

import (
	"time"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// Defaults of a Function's spec.scale, as its API documents them.
const (
	DefaultMaxReplicas       = 10
	DefaultTargetConcurrency = 10
	DefaultStableWindow      = 60 * time.Second
	DefaultIdle              = 60 * time.Second
	// PanicThreshold: panic when the panic window asks for at least this many times the ready
	// pods (Knative's 200%).
	PanicThreshold = 2.0
	// MaxScaleDownRate: one decision outside panic leaves at least ready/rate pods (Knative's).
	MaxScaleDownRate = 2.0
)

// Settings tune the decisions of one function.
type Settings struct {
	MinReplicas, MaxReplicas int32
	// TargetConcurrency is the in-flight calls one pod is meant to serve.
	TargetConcurrency float64
	// TargetRate, when positive, is the calls per second one pod is meant to serve.
	TargetRate float64
	// StableWindow is averaged over; the panic window is a tenth of it.
	StableWindow time.Duration
	// Idle is how long without any call before scaling to zero.
	Idle time.Duration
}

// PanicWindow is a tenth of the stable window, at least a second.
func (s Settings) PanicWindow() time.Duration {
	return max(s.StableWindow/10, time.Second)
}

// SettingsOf reads a Function's spec.scale with its defaults.
func SettingsOf(fn *serverlessv1.Function) Settings {
	sc := fn.Spec.Scale
	s := Settings{
		MaxReplicas:       DefaultMaxReplicas,
		TargetConcurrency: DefaultTargetConcurrency,
		StableWindow:      DefaultStableWindow,
		Idle:              DefaultIdle,
	}
	if sc.MinReplicas != nil {
		s.MinReplicas = max(*sc.MinReplicas, 0)
	}
	if sc.MaxReplicas != nil && *sc.MaxReplicas > 0 {
		s.MaxReplicas = *sc.MaxReplicas
	}
	s.MaxReplicas = max(s.MaxReplicas, s.MinReplicas, 1)
	if sc.TargetConcurrency != nil && *sc.TargetConcurrency > 0 {
		s.TargetConcurrency = float64(*sc.TargetConcurrency)
	}
	if sc.TargetRequestsPerSecond != nil && *sc.TargetRequestsPerSecond > 0 {
		s.TargetRate = float64(*sc.TargetRequestsPerSecond)
	}
	if sc.StableWindowSeconds != nil && *sc.StableWindowSeconds > 0 {
		s.StableWindow = time.Duration(*sc.StableWindowSeconds) * time.Second
	}
	if sc.IdleSeconds != nil && *sc.IdleSeconds >= 0 {
		s.Idle = time.Duration(*sc.IdleSeconds) * time.Second
	}
	return s
}
