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

// scrapeHistogram reads one histogram from the apiserver's /metrics: the series whose labels
// include match (all of them for nil), added up.
func (e *env) scrapeHistogram(ctx context.Context, name string, match map[string]string) (histogram, error) {
	body, err := e.scrapeMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return parseHistogram(body, name, match)
}

func (e *env) scrapeMetrics(ctx context.Context) ([]byte, error) {
	body, err := e.api.Get().AbsPath("/metrics").Do(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	return body, nil
}

// sample is one line of the text exposition format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseSample reads a sample line: name, optional {labels}, value and an optional timestamp,
// which is dropped.
func parseSample(line string) (sample, error) {
	var s sample
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return s, fmt.Errorf("malformed sample %q", line)
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		labels, rest, err := parseLabels(line[1:])
		if err != nil {
			return s, fmt.Errorf("sample %q: %w", s.name, err)
		}
		s.labels, line = labels, rest
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return s, fmt.Errorf("sample %q: no value", s.name)
	}
	v, err := strconv.ParseFloat(fields[0], 64) // ParseFloat accepts "+Inf" and "NaN"
	if err != nil {
		return s, fmt.Errorf("sample %q: value %q: %w", s.name, fields[0], err)
	}
	s.value = v
	return s, nil
}

// parseLabels reads name="value" pairs up to the closing brace and returns what follows it.
// Values may hold escaped quotes, backslashes and newlines, and commas.
func parseLabels(text string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		text = strings.TrimLeft(text, " ,")
		if rest, ok := strings.CutPrefix(text, "}"); ok {
			return labels, rest, nil
		}
		name, rest, ok := strings.Cut(text, `="`)
		if !ok || name == "" || strings.ContainsAny(name, `{}," `) {
			return nil, "", fmt.Errorf("malformed labels at %q", text)
		}
		var v strings.Builder
		closed := false
		i := 0
		for ; i < len(rest); i++ {
			c := rest[i]
			if c == '"' {
				closed = true
				break
			}
			if c == '\\' && i+1 < len(rest) {
				i++
				switch rest[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(rest[i])
				}
				continue
			}
			v.WriteByte(c)
		}
		if !closed {
			return nil, "", fmt.Errorf("label %s: unterminated value", name)
		}
		labels[name] = v.String()
		text = rest[i+1:]
	}
}

// matches reports whether labels hold every pair of match.
func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// parseHistogram extracts the buckets of a histogram, adding up the series whose labels
// include match; it is enough for the apiserver's metrics and needs no Prometheus library.
func parseHistogram(text []byte, name string, match map[string]string) (histogram, error) {
	counts := map[float64]float64{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"_bucket") {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", name, err)
		}
		if s.name != name+"_bucket" || !matches(s.labels, match) {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: bucket %q: %w", name, s.labels["le"], err)
		}
		counts[le] += s.value
	}
	if len(counts) == 0 {
		return nil, fmt.Errorf("metric %s not found", name)
	}
	h := make(histogram, 0, len(counts))
	for le, n := range counts {
		h = append(h, bucket{le: le, count: n})
	}
	sort.Slice(h, func(i, j int) bool { return h[i].le < h[j].le })
	return h, nil
}

// sumSamples adds up the samples of name whose labels include match; found is false when
// there are none.
func sumSamples(text []byte, name string, match map[string]string) (total float64, found bool, err error) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return 0, false, fmt.Errorf("metric %s: %w", name, err)
		}
		if s.name == name && matches(s.labels, match) {
			total, found = total+s.value, true
		}
	}
	return total, found, nil
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
