package netsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
)

func TestRotation(t *testing.T) {
	var got [][]int
	for i := range 4 {
		got = append(got, rotation(i, 3))
	}
	want := [][]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 1, 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rotation (-want +got):\n%s", diff)
	}
}

// fileServer serves /small and /large of the given sizes and counts connections.
func fileServer(t *testing.T, small, large int) (addr string, conns func() int) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("s"), small)) })
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("l"), large)) })
	srv := httptest.NewUnstartedServer(mux)
	var n atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), func() int { return int(n.Load()) }
}

func TestMeasureGets(t *testing.T) {
	addr, conns := fileServer(t, 1024, 3<<20)
	targets := []httpTarget{{Name: "a", Addr: addr}, {Name: "b", Addr: addr}}
	got, err := measureGets(t.Context(), targets, "/small", 1024, 20, 3, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if len(got[name]) != 20 {
			t.Errorf("target %s: %d samples, want 20", name, len(got[name]))
		}
		for _, d := range got[name] {
			if d <= 0 {
				t.Errorf("target %s: sample %v", name, d)
			}
		}
	}
	// Every GET, the unmeasured ones too, had a connection of its own.
	if n := conns(); n != 2*(20+3) {
		t.Errorf("%d connections, want %d", n, 2*(20+3))
	}
	if _, err := measureGets(t.Context(), targets, "/large", 3<<20, 2, 1, 5*time.Second); err != nil {
		t.Errorf("large GETs: %v", err)
	}
}

func TestMeasureGetsFails(t *testing.T) {
	addr, _ := fileServer(t, 1000, 0)
	tests := []struct {
		name, path string
		size       int64
		want       string
	}{
		{"short body", "/small", 1024, "1000 bytes, want 200 OK with 1024"},
		{"not found", "/nothing", 1024, "404 Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := measureGets(t.Context(), []httpTarget{{Name: "a", Addr: addr}}, tt.path, tt.size, 1, 0, 5*time.Second)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// dnsServer answers A queries for the names in answers on a UDP port of loopback.
func dnsServer(t *testing.T, answers map[string]string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg).SetReply(req)
		q := req.Question[0]
		if ip, ok := answers[q.Name]; ok {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: net.ParseIP(ip)})
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	srv := &dns.Server{PacketConn: pc, Handler: h}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func TestMeasureDNS(t *testing.T) {
	server := dnsServer(t, map[string]string{"files.ns.svc.cluster.local.": "10.96.0.20", "mirror.example.": "192.0.2.80"})
	targets := []dnsTarget{
		{Name: "service", Server: server, Question: "files.ns.svc.cluster.local", Want: "10.96.0.20"},
		{Name: "outside", Server: server, Question: "mirror.example"},
		{Name: "wrong answer", Server: server, Question: "mirror.example", Want: "192.0.2.1"},
		{Name: "missing", Server: server, Question: "nowhere.example"},
	}
	got, errs, first := measureDNS(t.Context(), targets, 10, 2, 2*time.Second)
	counts := map[string]int{}
	for name, s := range got {
		counts[name] = len(s)
	}
	if diff := cmp.Diff(map[string]int{"service": 10, "outside": 10, "wrong answer": 0, "missing": 0}, counts); diff != "" {
		t.Errorf("samples per target (-want +got):\n%s", diff)
	}
	// The unmeasured queries' failures are not counted.
	if diff := cmp.Diff(map[string]int{"wrong answer": 10, "missing": 10}, errs); diff != "" {
		t.Errorf("errors per target (-want +got):\n%s", diff)
	}
	if !strings.Contains(first["wrong answer"], "want 192.0.2.1") || !strings.Contains(first["missing"], "NXDOMAIN") {
		t.Errorf("first errors = %q", first)
	}
}

func TestProbeMain(t *testing.T) {
	addr, _ := fileServer(t, 100, 1000)
	server := dnsServer(t, map[string]string{"mirror.example.": "192.0.2.80"})
	sp := spec{
		HTTP:      []httpTarget{{Name: targetPod, Addr: addr}, {Name: targetClusterIP, Addr: addr}},
		SmallPath: "/small", SmallBytes: 100, LargePath: "/large", LargeBytes: 1000,
		Samples: 5, Warmup: 1, Transfers: 2, OpTimeout: 5 * time.Second, DNSTimeout: 2 * time.Second,
		DNS: []dnsTarget{{Name: dnsUpstream, Server: server, Question: "mirror.example"}},
	}
	in, err := json.Marshal(sp)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := ProbeMain(context.Background(), bytes.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var res result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	got := []int{len(res.Latency[targetPod]), len(res.Latency[targetClusterIP]), len(res.Transfer[targetPod]), len(res.Transfer[targetClusterIP]), len(res.DNS[dnsUpstream])}
	if diff := cmp.Diff([]int{5, 5, 2, 2, 5}, got); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}

	stderr.Reset()
	if code := ProbeMain(context.Background(), strings.NewReader("{"), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "read spec") {
		t.Errorf("bad spec: exit %d, %q; want 2 and a message", code, stderr.String())
	}
}

func TestIsProbe(t *testing.T) {
	if !IsProbe([]string{"/tmp/bench", ProbeArg}) || IsProbe([]string{"/tmp/bench", "-suite", "network"}) || IsProbe([]string{"/tmp/bench"}) {
		t.Error("IsProbe misreads its command lines")
	}
}
