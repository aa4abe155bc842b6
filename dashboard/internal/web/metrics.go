package web

import (
	"context"
	"strings"
)

// byLabel runs an instant query and keys its values by one label; a failure is noted on the
// page and gives an empty map.
func (s *Server) byLabel(ctx context.Context, p *page, label, q string) map[string]float64 {
	return s.byLabels(ctx, p, q, label)
}

// byLabels keys an instant query's values by the labels' values joined with "/".
func (s *Server) byLabels(ctx context.Context, p *page, q string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	if s.cfg.Metrics == nil {
		return out
	}
	samples, err := s.cfg.Metrics.Query(ctx, q)
	if err != nil {
		p.fail("prometheus", err)
		return out
	}
	for _, smp := range samples {
		key := make([]string, len(labels))
		for i, l := range labels {
			key[i] = smp.Labels[l]
		}
		out[strings.Join(key, "/")] += smp.Value
	}
	return out
}
