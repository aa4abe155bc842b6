package clusterdns

import (
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
)

// upstream is a fake resolver on 127.0.0.1 that records the queries it gets.
type upstream struct {
	addr string
	mu   sync.Mutex
	seen []string // "udp example.org." / "tcp ..."
}

func (u *upstream) queries() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

// startUpstream answers example.org A, and big.example.org TXT with more than 512 bytes.
func startUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		netw := "udp"
		if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
			netw = "tcp"
		}
		q := req.Question[0]
		u.mu.Lock()
		u.seen = append(u.seen, netw+" "+q.Name)
		u.mu.Unlock()
		resp := new(dns.Msg).SetReply(req)
		switch q.Name {
		case "example.org.":
			if q.Qtype == dns.TypeA {
				resp.Answer = append(resp.Answer, &dns.A{Hdr: header(q.Name, dns.TypeA), A: net.ParseIP("192.0.2.1")})
			}
		case "big.example.org.":
			for i := range 20 {
				resp.Answer = append(resp.Answer, &dns.TXT{Hdr: header(q.Name, dns.TypeTXT), Txt: []string{strings.Repeat(string(rune('a'+i)), 60)}})
			}
		default:
			resp.Rcode = dns.RcodeNameError
		}
		if netw == "udp" {
			resp.Truncate(dns.MinMsgSize)
		}
		_ = w.WriteMsg(resp)
	})
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	u.addr = pc.LocalAddr().String()
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: handler}, {Listener: ln, Handler: handler}} {
		go func() { _ = srv.ActivateAndServe() }()
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return u
}

// deadUpstream takes UDP queries and never answers.
func deadUpstream(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc.LocalAddr().String()
}

// startServer runs the server under test on 127.0.0.1 and returns its address.
func startServer(t *testing.T, zone *Zone, upstreams ...string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Config{PacketConn: pc, Listener: ln, Domain: "cluster.local", Upstreams: upstreams,
		Timeout: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if zone != nil {
		s.SetZone(zone)
	}
	ctx := t.Context()
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return pc.LocalAddr().String()
}

func query(t *testing.T, server, netw, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: netw, Timeout: 10 * time.Second}
	resp, _, err := c.ExchangeContext(t.Context(), new(dns.Msg).SetQuestion(name, qtype), server)
	if err != nil {
		t.Fatalf("%s %s %s: %v", netw, name, dns.TypeToString[qtype], err)
	}
	return resp
}

func answers(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		out = append(out, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	return out
}

func TestServer(t *testing.T) {
	up := startUpstream(t)
	server := startServer(t, testZone(), deadUpstream(t), up.addr)

	for _, netw := range []string{"udp", "tcp"} {
		t.Run(netw, func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				qtype uint16
				rcode int
				want  []string
			}{
				{"web.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"web.default.svc.cluster.local. 5 IN A 10.96.0.10"}},
				{"nope.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
				{"shop.example.com.", dns.TypeA, dns.RcodeSuccess, []string{"shop.example.com. 5 IN A 10.96.0.80"}},
				// Forwarded past the dead first upstream to the second.
				{"example.org.", dns.TypeA, dns.RcodeSuccess, []string{"example.org. 5 IN A 192.0.2.1"}},
				{"missing.example.org.", dns.TypeA, dns.RcodeNameError, nil},
				// The ExternalName's target is resolved upstream.
				{"ext.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{
					"ext.default.svc.cluster.local. 5 IN CNAME example.org.", "example.org. 5 IN A 192.0.2.1"}},
			} {
				resp := query(t, server, netw, tc.name, tc.qtype)
				if resp.Rcode != tc.rcode {
					t.Errorf("%s: rcode %s, want %s", tc.name, dns.RcodeToString[resp.Rcode], dns.RcodeToString[tc.rcode])
				}
				if diff := cmp.Diff(tc.want, answers(resp)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", tc.name, diff)
				}
			}
		})
	}
}

// TestServerTruncation: an answer too big for UDP comes from upstream over TCP, reaches a UDP
// client truncated, and whole over TCP.
func TestServerTruncation(t *testing.T) {
	up := startUpstream(t)
	server := startServer(t, testZone(), up.addr)
	resp := query(t, server, "udp", "big.example.org.", dns.TypeTXT)
	if !resp.Truncated {
		t.Errorf("UDP answer of %d records is not truncated", len(resp.Answer))
	}
	resp = query(t, server, "tcp", "big.example.org.", dns.TypeTXT)
	if resp.Truncated || len(resp.Answer) != 20 {
		t.Errorf("TCP answer: truncated %v, %d records; want all 20", resp.Truncated, len(resp.Answer))
	}
	want := []string{"udp big.example.org.", "tcp big.example.org.", "tcp big.example.org."}
	if diff := cmp.Diff(want, up.queries()); diff != "" {
		t.Errorf("upstream queries (-want +got):\n%s", diff)
	}
}

func TestServerFailures(t *testing.T) {
	// No zone yet: cluster names fail softly, others still go upstream.
	up := startUpstream(t)
	server := startServer(t, nil, up.addr)
	if resp := query(t, server, "udp", "web.default.svc.cluster.local.", dns.TypeA); resp.Rcode != dns.RcodeServerFailure {
		t.Errorf("before the first zone: %s, want SERVFAIL", dns.RcodeToString[resp.Rcode])
	}
	if resp := query(t, server, "udp", "example.org.", dns.TypeA); resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 1 {
		t.Errorf("before the first zone, forwarding: %v", resp)
	}
	// Every upstream dead: SERVFAIL.
	dead := startServer(t, testZone(), deadUpstream(t))
	if resp := query(t, dead, "udp", "example.org.", dns.TypeA); resp.Rcode != dns.RcodeServerFailure {
		t.Errorf("dead upstream: %s, want SERVFAIL", dns.RcodeToString[resp.Rcode])
	}
}

func TestUpstreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	conf := "search example.com\nnameserver 169.254.20.10\nnameserver 192.0.2.53\nnameserver 192.0.2.54\noptions ndots:2\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Upstreams(path, netip.MustParseAddr("169.254.20.10"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"192.0.2.53:53", "192.0.2.54:53"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
