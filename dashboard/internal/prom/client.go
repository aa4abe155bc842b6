package prom

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Sample is one series of an instant vector.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Point is one value of a range series.
type Point struct {
	Time  time.Time
	Value float64
}

// Series is one series of a range matrix.
type Series struct {
	Labels map[string]string
	Points []Point
}

// Client talks to one Prometheus. Base is the URL its API paths hang off: the Service's
// address in the cluster, or the apiserver's services proxy path outside it.
type Client struct {
	Base string
	HTTP *http.Client
}

// New returns a client of the Prometheus at base, through hc (http.DefaultClient when nil).
func New(base string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{Base: strings.TrimRight(base, "/"), HTTP: hc}
}

// Query evaluates q at now.
func (c *Client) Query(ctx context.Context, q string) ([]Sample, error) {
	var raw []struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	if err := c.get(ctx, "/api/v1/query", url.Values{"query": {q}}, "vector", &raw); err != nil {
		return nil, err
	}
	out := make([]Sample, 0, len(raw))
	for _, r := range raw {
		_, v, err := pair(r.Value)
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", q, err)
		}
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
}

// QueryRange evaluates q from start to end every step.
func (c *Client) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]Series, error) {
	params := url.Values{
		"query": {q},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	var raw []struct {
		Metric map[string]string `json:"metric"`
		Values [][2]any          `json:"values"`
	}
	if err := c.get(ctx, "/api/v1/query_range", params, "matrix", &raw); err != nil {
		return nil, err
	}
	out := make([]Series, 0, len(raw))
	for _, r := range raw {
		s := Series{Labels: r.Metric, Points: make([]Point, 0, len(r.Values))}
		for _, pv := range r.Values {
			t, v, err := pair(pv)
			if err != nil {
				return nil, fmt.Errorf("query_range %q: %w", q, err)
			}
			s.Points = append(s.Points, Point{Time: t, Value: v})
		}
		out = append(out, s)
	}
	return out, nil
}

// get sends a GET to path and decodes the answer's data.result, which must be of type want.
func (c *Client) get(ctx context.Context, path string, params url.Values, want string, result any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("prometheus %s: HTTP %d: %.200s", path, resp.StatusCode, body)
	}
	if answer.Status != "success" {
		return fmt.Errorf("prometheus %s: %s", path, answer.Error)
	}
	if answer.Data.ResultType != want {
		return fmt.Errorf("prometheus %s: a %s, not a %s", path, answer.Data.ResultType, want)
	}
	return json.Unmarshal(answer.Data.Result, result)
}

// pair decodes Prometheus' [unix seconds, "value"].
func pair(p [2]any) (time.Time, float64, error) {
	ts, ok := p[0].(float64)
	if !ok {
		return time.Time{}, 0, fmt.Errorf("timestamp %v is not a number", p[0])
	}
	s, ok := p[1].(string)
	if !ok {
		return time.Time{}, 0, fmt.Errorf("value %v is not a string", p[1])
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("value %q: %w", s, err)
	}
	sec := int64(ts)
	return time.Unix(sec, int64((ts-float64(sec))*1e9)), v, nil
}
