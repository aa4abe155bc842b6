package token

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/workqueue/clock"
)

// fakeAPI issues tokens named t1, t2... that expire after the seconds asked (or grant, when
// set), and fails while fail is set.
type fakeAPI struct {
	clock *clock.Fake
	fail  bool
	grant int64
	calls []string
}

func (f *fakeAPI) CreateToken(_ context.Context, namespace, name string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	f.calls = append(f.calls, namespace+"/"+name+"@"+string(req.Spec.BoundObjectRef.UID))
	if f.fail {
		return nil, errors.New("apiserver unavailable")
	}
	out := req.DeepCopy()
	secs := *req.Spec.ExpirationSeconds
	if f.grant > 0 {
		secs = f.grant
		out.Spec.ExpirationSeconds = &secs
	}
	out.Status = authnv1.TokenRequestStatus{
		Token:               fmt.Sprintf("t%d", len(f.calls)),
		ExpirationTimestamp: metav1.NewTime(f.clock.Now().Add(time.Duration(secs) * time.Second)),
	}
	return out, nil
}

func request(uid types.UID, seconds int64, audiences ...string) *authnv1.TokenRequest {
	return &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		Audiences:         audiences,
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authnv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p-" + string(uid), UID: uid},
	}}
}

// step is one thing that happens to the manager: the clock moves, the API starts or stops
// failing, a pod is removed, the cache is cleaned, then a token is asked for.
type step struct {
	advance time.Duration
	fail    bool
	remove  types.UID
	cleanup bool
	req     *authnv1.TokenRequest

	wantToken string
	wantErr   string
	// wantCalls is how many requests the API has had in all after the step.
	wantCalls int
}

func TestGetServiceAccountToken(t *testing.T) {
	hour := int64(3600)
	tests := []struct {
		name  string
		grant int64
		steps []step
	}{
		{
			name: "reused until 80% of its life, then refreshed",
			steps: []step{
				{req: request("u1", hour), wantToken: "t1", wantCalls: 1},
				{advance: 47 * time.Minute, req: request("u1", hour), wantToken: "t1", wantCalls: 1},
				{advance: time.Minute, req: request("u1", hour), wantToken: "t1", wantCalls: 1},      // 48m: exactly 80%
				{advance: time.Second, req: request("u1", hour), wantToken: "t2", wantCalls: 2},      // past 80%
				{advance: 40 * time.Minute, req: request("u1", hour), wantToken: "t2", wantCalls: 2}, // the new one's clock
			},
		},
		{
			name: "a token for 48 hours is refreshed after 24",
			steps: []step{
				{req: request("u1", 48*hour), wantToken: "t1", wantCalls: 1},
				{advance: 24 * time.Hour, req: request("u1", 48*hour), wantToken: "t1", wantCalls: 1},
				{advance: time.Second, req: request("u1", 48*hour), wantToken: "t2", wantCalls: 2},
			},
		},
		{
			name:  "the lifetime the API granted decides, not the one asked",
			grant: 600,
			steps: []step{
				{req: request("u1", hour), wantToken: "t1", wantCalls: 1},
				{advance: 8 * time.Minute, req: request("u1", hour), wantToken: "t1", wantCalls: 1},
				{advance: time.Second, req: request("u1", hour), wantToken: "t2", wantCalls: 2},
			},
		},
		{
			name: "each audience, lifetime and pod has its own token",
			steps: []step{
				{req: request("u1", hour), wantToken: "t1", wantCalls: 1},
				{req: request("u1", hour, "vault"), wantToken: "t2", wantCalls: 2},
				{req: request("u1", 2*hour), wantToken: "t3", wantCalls: 3},
				{req: request("u2", hour), wantToken: "t4", wantCalls: 4},
				{req: request("u1", hour, "vault"), wantToken: "t2", wantCalls: 4},
			},
		},
		{
			name: "a failed refresh keeps the old token and backs off",
			steps: []step{
				{req: request("u1", hour), wantToken: "t1", wantCalls: 1},
				{advance: 50 * time.Minute, fail: true, req: request("u1", hour), wantToken: "t1", wantCalls: 2},
				// Within the 1s back-off: no request.
				{advance: 500 * time.Millisecond, fail: true, req: request("u1", hour), wantToken: "t1", wantCalls: 2},
				{advance: time.Second, fail: true, req: request("u1", hour), wantToken: "t1", wantCalls: 3},
				// The second failure doubled the back-off to 2s.
				{advance: 1500 * time.Millisecond, req: request("u1", hour), wantToken: "t1", wantCalls: 3},
				{advance: time.Second, req: request("u1", hour), wantToken: "t4", wantCalls: 4},
			},
		},
		{
			name: "an expired token is not handed out when its refresh fails",
			steps: []step{
				{req: request("u1", hour), wantToken: "t1", wantCalls: 1},
				{advance: 61 * time.Minute, fail: true, req: request("u1", hour), wantErr: "expired and refresh failed: apiserver unavailable", wantCalls: 2},
				{advance: 100 * time.Millisecond, fail: true, req: request("u1", hour), wantErr: "failed to fetch token: apiserver unavailable (retrying in 1s)", wantCalls: 2},
			},
		},
		{
			name: "a first request that fails is an error and backs off",
			steps: []step{
				{fail: true, req: request("u1", hour), wantErr: "failed to fetch token: apiserver unavailable", wantCalls: 1},
				{fail: true, req: request("u1", hour), wantErr: "failed to fetch token: apiserver unavailable (retrying in 1s)", wantCalls: 1},
				{advance: time.Second, req: request("u1", hour), wantToken: "t2", wantCalls: 2},
			},
		},
		{
			name: "removing a pod drops its tokens only",
			steps: []step{
				{req: request("u1", hour), wantToken: "t1", wantCalls: 1},
				{req: request("u2", hour), wantToken: "t2", wantCalls: 2},
				{remove: "u1", req: request("u2", hour), wantToken: "t2", wantCalls: 2},
				{req: request("u1", hour), wantToken: "t3", wantCalls: 3},
			},
		},
		{
			name: "cleanup drops expired tokens",
			steps: []step{
				{req: request("u1", hour), wantToken: "t1", wantCalls: 1},
				{req: request("u2", 2*hour), wantToken: "t2", wantCalls: 2},
				{advance: 61 * time.Minute, cleanup: true, req: request("u2", 2*hour), wantToken: "t2", wantCalls: 2},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			api := &fakeAPI{clock: clk, grant: tt.grant}
			m := New(Config{Requester: api, Clock: clk, Jitter: func() float64 { return 0 }})
			for i, s := range tt.steps {
				clk.Step(s.advance)
				api.fail = s.fail
				if s.remove != "" {
					m.DeleteServiceAccountToken(s.remove)
				}
				if s.cleanup {
					m.Cleanup()
				}
				tr, err := m.GetServiceAccountToken(t.Context(), "ns", "sa", s.req)
				var got string
				if err == nil {
					got = tr.Status.Token
				}
				if s.wantErr == "" && err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if s.wantErr != "" && (err == nil || !strings.HasSuffix(err.Error(), s.wantErr)) {
					t.Fatalf("step %d: err %v, want one ending %q", i, err, s.wantErr)
				}
				if got != s.wantToken {
					t.Errorf("step %d: token %q, want %q", i, got, s.wantToken)
				}
				if len(api.calls) != s.wantCalls {
					t.Errorf("step %d: %d requests, want %d: %v", i, len(api.calls), s.wantCalls, api.calls)
				}
			}
		})
	}
}

func TestCleanup(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	api := &fakeAPI{clock: clk}
	m := New(Config{Requester: api, Clock: clk, Jitter: func() float64 { return 0 }})
	for _, r := range []*authnv1.TokenRequest{request("short", 600), request("long", 3600)} {
		if _, err := m.GetServiceAccountToken(t.Context(), "ns", "sa", r); err != nil {
			t.Fatal(err)
		}
	}
	api.fail = true
	if _, err := m.GetServiceAccountToken(t.Context(), "ns", "sa", request("failing", 600)); err == nil {
		t.Fatal("a failing first request returned a token")
	}
	clk.Step(11 * time.Minute)
	m.Cleanup()
	var pods []types.UID
	for _, e := range m.cache {
		pods = append(pods, e.pod)
	}
	if d := cmp.Diff([]types.UID{"long"}, pods); d != "" {
		t.Errorf("cached after cleanup (-want +got):\n%s", d)
	}
}

func TestRetryDelay(t *testing.T) {
	m := New(Config{Jitter: func() float64 { return 0.5 }})
	var got []time.Duration
	for n := 1; n <= 8; n++ {
		got = append(got, m.retryDelay(n))
	}
	ms := time.Millisecond
	want := []time.Duration{1050 * ms, 2100 * ms, 4200 * ms, 8400 * ms, 16800 * ms, 33600 * ms, 63 * time.Second, 63 * time.Second}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("retry delays (-want +got):\n%s", d)
	}
}
