package incluster

import (
	"fmt"
	"strconv"
	"time"
)

// DefaultInterval is the time between rounds when INCLUSTER_INTERVAL is unset.
const DefaultInterval = 5 * time.Second

// Settings are what the environment asks of the program.
type Settings struct {
	Interval time.Duration
	// AllNamespaces lists across the cluster rather than in the pod's own namespace, as a
	// cluster-wide exporter (kube-state-metrics) does.
	AllNamespaces bool
}

// ParseSettings reads INCLUSTER_INTERVAL (a Go duration) and INCLUSTER_ALL_NAMESPACES (a
// boolean).
func ParseSettings(getenv func(string) string) (Settings, error) {
	s := Settings{Interval: DefaultInterval}
	if v := getenv("INCLUSTER_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Settings{}, fmt.Errorf("INCLUSTER_INTERVAL %q: want a positive duration such as 5s", v)
		}
		s.Interval = d
	}
	if v := getenv("INCLUSTER_ALL_NAMESPACES"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Settings{}, fmt.Errorf("INCLUSTER_ALL_NAMESPACES %q: %w", v, err)
		}
		s.AllNamespaces = b
	}
	return s, nil
}
