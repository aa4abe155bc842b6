package netsuite

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// ProbeArg, as the first argument, starts the bench binary as a probe: it measures from the
// network namespace it was started in (nsenter puts it in a pod's), reading a spec as JSON
// on stdin and writing the samples as JSON on stdout.
const ProbeArg = "-netsuite-probe"

// IsProbe reports whether a command line (os.Args) starts a probe.
func IsProbe(args []string) bool { return len(args) > 1 && args[1] == ProbeArg }

// ProbeMain runs a probe and returns its exit code.
func ProbeMain(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	var sp spec
	if err := json.NewDecoder(stdin).Decode(&sp); err != nil {
		fmt.Fprintf(stderr, "probe: read spec: %v\n", err)
		return 2
	}
	res, err := sp.run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "probe: %v\n", err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		fmt.Fprintf(stderr, "probe: write result: %v\n", err)
		return 1
	}
	return 0
}

// spec is what one probe measures. Targets of one kind are interleaved sample by sample.
type spec struct {
	HTTP       []httpTarget  `json:"http,omitempty"`
	SmallPath  string        `json:"smallPath,omitempty"`
	SmallBytes int64         `json:"smallBytes,omitempty"`
	LargePath  string        `json:"largePath,omitempty"`
	LargeBytes int64         `json:"largeBytes,omitempty"`
	Samples    int           `json:"samples"`
	Warmup     int           `json:"warmup"`
	Transfers  int           `json:"transfers"`
	DNS        []dnsTarget   `json:"dns,omitempty"`
	OpTimeout  time.Duration `json:"opTimeout"`
	DNSTimeout time.Duration `json:"dnsTimeout"`
}

type httpTarget struct {
	Name string `json:"name"`
	Addr string `json:"addr"` // host:port
}

type dnsTarget struct {
	Name     string `json:"name"`
	Server   string `json:"server"` // host:port
	Question string `json:"question"`
	// Want, when set, is an address the answer must hold (a Service's ClusterIP).
	Want string `json:"want,omitempty"`
}

// result holds the raw samples by target name; the caller summarises them.
type result struct {
	Latency  map[string][]time.Duration `json:"latency,omitempty"`
	Transfer map[string][]time.Duration `json:"transfer,omitempty"`
	DNS      map[string][]time.Duration `json:"dns,omitempty"`
	// DNSErrors counts failed queries (timeouts, errors, wrong answers) by target, which
	// have no sample; DNSFirstError is the first of them.
	DNSErrors     map[string]int    `json:"dnsErrors,omitempty"`
	DNSFirstError map[string]string `json:"dnsFirstError,omitempty"`
}

func (sp spec) run(ctx context.Context) (*result, error) {
	res := &result{}
	var err error
	if len(sp.HTTP) > 0 {
		if res.Latency, err = measureGets(ctx, sp.HTTP, sp.SmallPath, sp.SmallBytes, sp.Samples, sp.Warmup, sp.OpTimeout); err != nil {
			return nil, fmt.Errorf("connection latency: %w", err)
		}
		if res.Transfer, err = measureGets(ctx, sp.HTTP, sp.LargePath, sp.LargeBytes, sp.Transfers, min(sp.Warmup, 1), sp.OpTimeout); err != nil {
			return nil, fmt.Errorf("throughput: %w", err)
		}
	}
	if len(sp.DNS) > 0 {
		res.DNS, res.DNSErrors, res.DNSFirstError = measureDNS(ctx, sp.DNS, sp.Samples, sp.Warmup, sp.DNSTimeout)
	}
	return res, ctx.Err()
}

// rotation is the order of k targets in round i: rotated by one each round, so each target
// goes first, second, ... equally often and drift in the machine's load hits all alike.
func rotation(i, k int) []int {
	order := make([]int, k)
	for j := range order {
		order[j] = (i + j) % k
	}
	return order
}

// measureGets makes warmup unmeasured then n measured GETs of path per target, each on a new
// connection, interleaved. A sample is the time from dialling to the body's last byte.
func measureGets(ctx context.Context, targets []httpTarget, path string, size int64, n, warmup int, timeout time.Duration) (map[string][]time.Duration, error) {
	out := make(map[string][]time.Duration, len(targets))
	for _, t := range targets {
		out[t.Name] = make([]time.Duration, 0, n)
	}
	g := newGetter(timeout)
	for i := range warmup + n {
		for _, j := range rotation(i, len(targets)) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			t := targets[j]
			d, err := g.get(ctx, t.Addr, path, size)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.Name, err)
			}
			if i >= warmup {
				out[t.Name] = append(out[t.Name], d)
			}
		}
	}
	return out, nil
}

// getter sends GETs over fresh connections, reusing its buffers between them.
type getter struct {
	dialer  net.Dialer
	timeout time.Duration
	br      *bufio.Reader
	buf     []byte
}

func newGetter(timeout time.Duration) *getter {
	return &getter{dialer: net.Dialer{Timeout: timeout}, timeout: timeout, br: bufio.NewReaderSize(nil, 16<<10), buf: make([]byte, 1<<20)}
}

// discard is io.Discard without ReadFrom, so that io.CopyBuffer reads into the getter's large
// buffer rather than io.Discard's 8 KiB ones.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// get is one connection: dial, one HTTP/1.1 request asking the server to close, the whole
// body read; it checks the status and the length.
func (g *getter) get(ctx context.Context, addr, path string, size int64) (time.Duration, error) {
	start := time.Now()
	conn, err := g.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(start.Add(g.timeout))
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: minik8s-bench\r\nConnection: close\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return 0, fmt.Errorf("GET %s from %s: %w", path, addr, err)
	}
	g.br.Reset(conn)
	resp, err := http.ReadResponse(g.br, nil)
	if err != nil {
		return 0, fmt.Errorf("GET %s from %s: %w", path, addr, err)
	}
	got, err := io.CopyBuffer(discard{}, resp.Body, g.buf)
	elapsed := time.Since(start)
	resp.Body.Close()
	if err != nil {
		return 0, fmt.Errorf("GET %s from %s: body: %w", path, addr, err)
	}
	if resp.StatusCode != http.StatusOK || got != size {
		return 0, fmt.Errorf("GET %s from %s: %s with %d bytes, want 200 OK with %d", path, addr, resp.Status, got, size)
	}
	return elapsed, nil
}

// measureDNS asks warmup unmeasured then n measured A queries per target over UDP, one at a
// time, interleaved, each from a new socket as a stub resolver does. A sample is the time
// from opening the socket to the answer.
func measureDNS(ctx context.Context, targets []dnsTarget, n, warmup int, timeout time.Duration) (map[string][]time.Duration, map[string]int, map[string]string) {
	out := make(map[string][]time.Duration, len(targets))
	errs, first := map[string]int{}, map[string]string{}
	for _, t := range targets {
		out[t.Name] = make([]time.Duration, 0, n)
	}
	c := newDNSClient(timeout)
	for i := range warmup + n {
		for _, j := range rotation(i, len(targets)) {
			if ctx.Err() != nil {
				return out, errs, first
			}
			t := targets[j]
			d, err := query(ctx, c, t)
			if i < warmup {
				continue
			}
			if err != nil {
				if errs[t.Name] == 0 {
					first[t.Name] = err.Error()
				}
				errs[t.Name]++
				continue
			}
			out[t.Name] = append(out[t.Name], d)
		}
	}
	return out, errs, first
}

func newDNSClient(timeout time.Duration) *dns.Client {
	return &dns.Client{Net: "udp", Timeout: timeout}
}

func query(ctx context.Context, c *dns.Client, t dnsTarget) (time.Duration, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(t.Question), dns.TypeA)
	start := time.Now()
	resp, _, err := c.ExchangeContext(ctx, m, t.Server)
	elapsed := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s at %s: %w", t.Question, t.Server, err)
	}
	if resp.Rcode != dns.RcodeSuccess {
		return 0, fmt.Errorf("%s at %s: %s", t.Question, t.Server, dns.RcodeToString[resp.Rcode])
	}
	var addrs []string
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok {
			addrs = append(addrs, a.A.String())
		}
	}
	if len(addrs) == 0 || (t.Want != "" && !slices.Contains(addrs, t.Want)) {
		return 0, fmt.Errorf("%s at %s: A records %v, want %s", t.Question, t.Server, addrs, cmp.Or(t.Want, "one"))
	}
	return elapsed, nil
}

// runProbe starts this binary as a probe under the command prefix (nsenter into a pod's
// network namespace, or nothing for the host's) and returns its samples.
func runProbe(ctx context.Context, prefix []string, sp spec) (*result, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own binary: %w", err)
	}
	in, err := json.Marshal(sp)
	if err != nil {
		return nil, err
	}
	argv := append(append([]string(nil), prefix...), self, ProbeArg)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	var res result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("%s: read result: %w", strings.Join(argv, " "), err)
	}
	return &res, nil
}

// hostPort joins an address and a port.
func hostPort(ip string, port int32) string {
	if a, err := netip.ParseAddr(ip); err == nil {
		return netip.AddrPortFrom(a, uint16(port)).String()
	}
	return net.JoinHostPort(ip, fmt.Sprint(port))
}
