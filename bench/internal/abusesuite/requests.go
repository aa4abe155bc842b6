package abusesuite

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net/url"
	"time"

	"minik8s.io/bench/internal/cluster"
	"minik8s.io/shared/abuse"
)

// RequestsConfig sizes the bad requests measurement.
type RequestsConfig struct {
	Kubeconfig string
	Requests   int
	// SlowEvery makes one request in SlowEvery come from a client slow to send its body.
	SlowEvery int
	Clients   int
	Seed      uint64
}

// RequestsDefaults are the flags' defaults.
var RequestsDefaults = RequestsConfig{Requests: 2000, SlowEvery: 10, Clients: 16, Seed: 1}

// Mode is one way of sending: the bad requests and the baseline of well-formed reads.
type Mode struct {
	Name          string
	Bad, Baseline abuse.Tally
}

// RequestsReport is both modes.
type RequestsReport struct {
	Requests, SlowEvery, Clients int
	Modes                        []Mode
}

// RunRequests sends the bad requests on fresh connections, then on kept-alive ones, each time
// after as many GETs of the suite's namespace sent the same way.
func RunRequests(ctx context.Context, cfg RequestsConfig, log *slog.Logger) (*RequestsReport, error) {
	mu, cleanup, err := cluster.ConnectMakeUp(ctx, cfg.Kubeconfig, "badrequests", "reqbench", log)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	u, err := url.Parse(mu.Config.Server)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(mu.Config.CAData) {
		return nil, errors.New("the kubeconfig holds no CA certificate")
	}
	tg := abuse.Target{Addr: u.Host, Token: mu.Config.Token,
		TLS: &tls.Config{RootCAs: pool, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}}
	bad := abuse.Generate(cfg.Seed, cfg.Requests, cfg.SlowEvery, mu.Namespace)
	reads := make([]abuse.Request, cfg.Requests)
	for i := range reads {
		// Slow where the bad one is: the pauses, not the server, dominate those.
		reads[i] = abuse.Request{Method: "GET", Path: "/api/v1/namespaces/" + mu.Namespace, Mutation: "none", Slow: bad[i].Slow}
	}
	rep := &RequestsReport{Requests: cfg.Requests, SlowEvery: cfg.SlowEvery, Clients: cfg.Clients}
	for _, keepAlive := range []bool{false, true} {
		m := Mode{Name: "fresh TLS connection each"}
		if keepAlive {
			m.Name = "kept-alive connections"
		}
		m.Baseline = abuse.Send(ctx, tg, reads, keepAlive, cfg.Clients)
		m.Bad = abuse.Send(ctx, tg, bad, keepAlive, cfg.Clients)
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		log.Info("bad requests", "mode", m.Name, "sent", m.Bad.Sent, "answered", m.Bad.Answered, "codes", m.Bad.Codes(),
			"elapsed", m.Bad.Elapsed.Round(time.Millisecond), "baseline", m.Baseline.Elapsed.Round(time.Millisecond))
		for _, r := range m.Bad.Unanswered {
			log.Warn("no answer", "request", r.Request.String(), "err", r.Err)
		}
		rep.Modes = append(rep.Modes, m)
	}
	return rep, nil
}
