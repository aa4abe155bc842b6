package suite

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// outboxLatencyMetric is the apiserver's histogram of the time from the
// outbox receiving a change on its etcd watch to the broker confirming it.
const outboxLatencyMetric = "minik8s_outbox_publish_latency_seconds"

// bucket is one cumulative histogram bucket.
type bucket struct {
	le    float64 // upper bound in seconds; +Inf for the last
	count float64 // observations <= le
}

// histogram is a Prometheus histogram read from the text exposition format.
type histogram []bucket

// scrapeHistogram reads one histogram from the apiserver's /metrics.
func (e *env) scrapeHistogram(ctx context.Context, name string) (histogram, error) {
	body, err := e.api.Get().AbsPath("/metrics").Do(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	return parseHistogram(body, name)
}

// parseHistogram extracts the buckets of an unlabelled histogram; it is
// enough for the apiserver's own metrics and needs no Prometheus library.
func parseHistogram(text []byte, name string) (histogram, error) {
	var h histogram
	prefix := name + `_bucket{le="`
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		leText, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			return nil, fmt.Errorf("metric %s: malformed line %q", name, line)
		}
		le, err := strconv.ParseFloat(leText, 64) // ParseFloat accepts "+Inf"
		if err != nil {
			return nil, fmt.Errorf("metric %s: bucket %q: %w", name, leText, err)
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: count %q: %w", name, value, err)
		}
		h = append(h, bucket{le: le, count: n})
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("metric %s not found", name)
	}
	sort.Slice(h, func(i, j int) bool { return h[i].le < h[j].le })
	return h, nil
}

// since returns the observations made after earlier was read.
func (h histogram) since(earlier histogram) histogram {
	out := make(histogram, len(h))
	for i, b := range h {
		out[i] = b
		if i < len(earlier) && earlier[i].le == b.le {
			out[i].count -= earlier[i].count
		}
	}
	return out
}

// total is the number of observations.
func (h histogram) total() float64 {
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].count
}

// quantile returns the upper bound of the bucket holding the p-th percentile:
// a bound, not an estimate, since the buckets double in width. It is zero
// without observations and +Inf when the percentile lies past the last
// finite bound.
func (h histogram) quantile(p float64) time.Duration {
	n := h.total()
	if n == 0 {
		return 0
	}
	rank := math.Ceil(p / 100 * n)
	for _, b := range h {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return time.Duration(math.MaxInt64)
			}
			return time.Duration(b.le * float64(time.Second))
		}
	}
	return time.Duration(math.MaxInt64)
}
