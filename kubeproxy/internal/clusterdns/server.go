package clusterdns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// DefaultTimeout bounds one exchange with one upstream server.
const DefaultTimeout = 2 * time.Second

// ourUDPSize is the EDNS buffer size advertised in local answers: the size DNS flag day 2020
// settled on, which fits one unfragmented packet on every path.
const ourUDPSize = 1232

// Config is the server's setup.
type Config struct {
	// Address is host:port for UDP and TCP, e.g. 169.254.20.10:53. Ignored for the sockets
	// given in PacketConn and Listener (tests hand over sockets on 127.0.0.1:0).
	Address    string
	PacketConn net.PacketConn
	Listener   net.Listener
	// Domain is the cluster domain, e.g. cluster.local.
	Domain string
	// Upstreams are the servers (host:port) other names go to, tried in order.
	Upstreams []string
	Timeout   time.Duration
	Logger    *slog.Logger
	Metrics   *Metrics
}

// Server answers DNS over UDP and TCP.
type Server struct {
	cfg    Config
	domain string
	zone   atomic.Pointer[Zone]
}

// NewServer returns a server; it opens no socket until Start. Until SetZone, names in the
// cluster domain get SERVFAIL (clients retry) rather than a wrong NXDOMAIN.
func NewServer(cfg Config) *Server {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{cfg: cfg, domain: dns.CanonicalName(cfg.Domain)}
}

// SetZone replaces the snapshot the server answers from.
func (s *Server) SetZone(z *Zone) { s.zone.Store(z) }

// Start serves until ctx ends, then shuts both listeners down.
func (s *Server) Start(ctx context.Context) error {
	pc, ln := s.cfg.PacketConn, s.cfg.Listener
	if pc == nil {
		var err error
		if pc, err = net.ListenPacket("udp", s.cfg.Address); err != nil {
			return fmt.Errorf("dns: %w", err)
		}
	}
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Address); err != nil {
			pc.Close()
			return fmt.Errorf("dns: %w", err)
		}
	}
	udp := &dns.Server{PacketConn: pc, Handler: s}
	tcp := &dns.Server{Listener: ln, Handler: s, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	for _, srv := range []*dns.Server{udp, tcp} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- srv.ActivateAndServe()
		}()
	}
	s.cfg.Logger.Info("serving DNS", "udp", pc.LocalAddr().String(), "tcp", ln.Addr().String(), "domain", s.domain, "upstreams", s.cfg.Upstreams)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		err = fmt.Errorf("dns: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = udp.ShutdownContext(sctx)
	_ = tcp.ShutdownContext(sctx)
	wg.Wait()
	return err
}

// ServeDNS answers one query.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	_, overTCP := w.RemoteAddr().(*net.TCPAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.Timeout*time.Duration(max(1, len(s.cfg.Upstreams))))
	defer cancel()
	resp, result := s.answer(ctx, req, overTCP)
	s.cfg.Metrics.observeRequest(result)
	if !overTCP {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = max(int(opt.UDPSize()), dns.MinMsgSize)
		}
		resp.Truncate(size)
	}
	if err := w.WriteMsg(resp); err != nil {
		s.cfg.Logger.Debug("dns: write answer", "err", err)
	}
}

// Results counted by the requests metric.
const (
	resultLocal     = "local"
	resultNXDomain  = "nxdomain"
	resultForwarded = "forwarded"
	resultServFail  = "servfail"
)

func (s *Server) answer(ctx context.Context, req *dns.Msg, overTCP bool) (*dns.Msg, string) {
	z := s.zone.Load()
	if z == nil {
		if len(req.Question) == 1 && dns.IsSubDomain(s.domain, strings.ToLower(req.Question[0].Name)) {
			return new(dns.Msg).SetRcode(req, dns.RcodeServerFailure), resultServFail
		}
		return s.forward(ctx, req, overTCP)
	}
	resp, fwd := z.Answer(req)
	if fwd {
		return s.forward(ctx, req, overTCP)
	}
	if opt := req.IsEdns0(); opt != nil {
		resp.SetEdns0(ourUDPSize, opt.Do())
	}
	// An ExternalName's CNAME to a name outside the cluster: resolve the target upstream
	// and add its records, as a recursive server does (stub resolvers do not chase).
	if n := len(resp.Answer); n > 0 && req.Question[0].Qtype != dns.TypeCNAME {
		if c, ok := resp.Answer[n-1].(*dns.CNAME); ok && !dns.IsSubDomain(s.domain, c.Target) {
			sub := new(dns.Msg).SetQuestion(c.Target, req.Question[0].Qtype)
			sub.RecursionDesired = true
			if up, result := s.forward(ctx, sub, overTCP); result == resultForwarded {
				resp.Answer = append(resp.Answer, up.Answer...)
				resp.Rcode = up.Rcode
			}
		}
	}
	if resp.Rcode == dns.RcodeNameError {
		return resp, resultNXDomain
	}
	return resp, resultLocal
}

// forward asks the upstream servers in turn; over UDP a truncated answer is asked again
// over TCP. When every server fails the answer is SERVFAIL.
func (s *Server) forward(ctx context.Context, req *dns.Msg, overTCP bool) (*dns.Msg, string) {
	start := time.Now()
	var errs []error
	for _, up := range s.cfg.Upstreams {
		resp, err := s.exchange(ctx, req, up, overTCP)
		if err == nil && resp.Truncated && !overTCP {
			resp, err = s.exchange(ctx, req, up, true)
		}
		if err == nil {
			s.cfg.Metrics.observeForward(time.Since(start))
			return resp, resultForwarded
		}
		errs = append(errs, fmt.Errorf("%s: %w", up, err))
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("no upstream servers"))
	}
	name := ""
	if len(req.Question) > 0 {
		name = req.Question[0].Name
	}
	s.cfg.Logger.Debug("dns: forwarding failed", "name", name, "err", errors.Join(errs...))
	return new(dns.Msg).SetRcode(req, dns.RcodeServerFailure), resultServFail
}

func (s *Server) exchange(ctx context.Context, req *dns.Msg, upstream string, tcp bool) (*dns.Msg, error) {
	c := &dns.Client{Net: "udp", Timeout: s.cfg.Timeout, UDPSize: dns.DefaultMsgSize}
	if tcp {
		c.Net = "tcp"
	}
	resp, _, err := c.ExchangeContext(ctx, req, upstream)
	return resp, err
}

// Upstreams reads the nameservers of a resolv.conf as host:port, leaving out self (the
// address this server answers on: a node whose resolv.conf points at it must not forward to
// itself).
func Upstreams(resolvConf string, self netip.Addr) ([]string, error) {
	cc, err := dns.ClientConfigFromFile(resolvConf)
	if err != nil {
		return nil, fmt.Errorf("read upstream servers: %w", err)
	}
	var out []string
	for _, srv := range cc.Servers {
		if ip, err := netip.ParseAddr(srv); err == nil && ip == self {
			continue
		}
		out = append(out, net.JoinHostPort(srv, cc.Port))
	}
	return out, nil
}
