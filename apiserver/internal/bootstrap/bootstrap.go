package bootstrap

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"minik8s.io/shared/kubeconfig"
	"minik8s.io/shared/pki"
)

// ClusterName names the cluster in every kubeconfig written here.
const ClusterName = "minik8s"

// DefaultServer is the URL written into kubeconfigs when Options.Server is empty.
const DefaultServer = "https://127.0.0.1:6443"

// Admin is the identity of the admin kubeconfig: system:masters may do everything.
var Admin = Identity{User: "admin", Groups: []string{"system:masters"}}

// Component is a control-plane or node-wide component with its own identity and kubeconfig.
type Component struct {
	Name string // kubeconfig file name: kubeconfigs/<Name>.kubeconfig
	User string
}

// Components are the identities made besides the admin and the nodes. Add an entry here when
// a component joins; Ensure creates its token and kubeconfig on the next start.
var Components = []Component{
	{Name: "scheduler", User: "system:kube-scheduler"},
	{Name: "controller-manager", User: "system:kube-controller-manager"},
	{Name: "serverless", User: "system:serverless"},
	{Name: "kubeproxy", User: "system:kube-proxy"},
}

// NodeGroup is the group of every node identity (system:node:<name>).
const NodeGroup = "system:nodes"

// ServiceHosts are the names and the first service IP under which pods reach the apiserver
// through the future kubernetes Service; they are in every serving certificate.
var ServiceHosts = []string{
	"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	"10.96.0.1",
}

// renewBefore is how long before expiry a serving certificate is reissued at start.
const renewBefore = 30 * 24 * time.Hour

// Options say what the state directory must hold.
type Options struct {
	// Hosts are extra names or addresses for the serving certificate, e.g. the advertise
	// address. Loopback, the host's names and addresses and ServiceHosts are always included.
	Hosts []string
	// Server is the apiserver URL written into kubeconfigs; DefaultServer when empty.
	Server string
	// Nodes get an identity system:node:<name> and kubeconfigs/node-<name>.kubeconfig.
	Nodes []string

	now func() time.Time // tests move the clock to exercise renewal
}

// Paths locate everything in a state directory.
type Paths struct {
	Home            string
	CACert          string
	CAKey           string
	ServingCert     string
	ServingKey      string
	SAKey           string // signs ServiceAccount tokens: RSA, PEM, owner-only
	SAPub           string // verifies them; the apiserver serves it as the JWKS
	Tokens          string
	AdminKubeconfig string
	// Components maps Component.Name to its kubeconfig; Nodes maps a node name to its.
	Components map[string]string
	Nodes      map[string]string
	LogDir     string
	RunDir     string
	EtcdDir    string
	// Written lists the files this Ensure call created or replaced, relative to Home, so the
	// caller can log what changed; empty when everything was already in place.
	Written []string
}

// PathsFor names the files of a state directory without touching the disk.
func PathsFor(home string, nodes []string) *Paths {
	p := &Paths{
		Home:            home,
		CACert:          filepath.Join(home, "pki", "ca.crt"),
		CAKey:           filepath.Join(home, "pki", "ca.key"),
		ServingCert:     filepath.Join(home, "pki", "apiserver.crt"),
		ServingKey:      filepath.Join(home, "pki", "apiserver.key"),
		SAKey:           filepath.Join(home, "pki", "sa.key"),
		SAPub:           filepath.Join(home, "pki", "sa.pub"),
		Tokens:          filepath.Join(home, "tokens.csv"),
		AdminKubeconfig: filepath.Join(home, "kubeconfig"),
		Components:      map[string]string{},
		Nodes:           map[string]string{},
		LogDir:          filepath.Join(home, "logs"),
		RunDir:          filepath.Join(home, "run"),
		EtcdDir:         filepath.Join(home, "etcd"),
	}
	for _, c := range Components {
		p.Components[c.Name] = filepath.Join(home, "kubeconfigs", c.Name+".kubeconfig")
	}
	for _, n := range nodes {
		p.Nodes[n] = filepath.Join(home, "kubeconfigs", "node-"+n+".kubeconfig")
	}
	return p
}

// NodeUser is the user name of a node's identity.
func NodeUser(node string) string { return "system:node:" + node }

// Ensure creates what is missing in home and returns where everything is. It never replaces
// the CA, the ServiceAccount signing key, tokens or kubeconfigs; the serving certificate alone
// is reissued from the CA when it lacks a requested host or nears expiry, which invalidates
// nothing a client holds.
func Ensure(home string, opts Options) (*Paths, error) {
	if home == "" {
		return nil, errors.New("bootstrap: empty state directory")
	}
	if opts.Server == "" {
		opts.Server = DefaultServer
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	u, err := url.Parse(opts.Server)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return nil, fmt.Errorf("bootstrap: server %q is not an https URL", opts.Server)
	}
	for _, n := range opts.Nodes {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return nil, fmt.Errorf("bootstrap: node name %q: %s", n, strings.Join(errs, "; "))
		}
	}
	p := PathsFor(home, opts.Nodes)
	for _, d := range []string{home, filepath.Join(home, "pki"), filepath.Join(home, "kubeconfigs"), p.LogDir, p.RunDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
	}
	ca, err := p.ensureCA(opts.now())
	if err != nil {
		return nil, err
	}
	// The server's own host goes in the certificate too: clients verify against it.
	required := slices.Concat([]string{"localhost", "127.0.0.1", u.Hostname()}, ServiceHosts, opts.Hosts)
	if err := p.ensureServing(ca, required, opts.now()); err != nil {
		return nil, err
	}
	if err := p.ensureSAKey(); err != nil {
		return nil, err
	}
	tokens, err := p.ensureTokens(opts.Nodes)
	if err != nil {
		return nil, err
	}
	if err := p.ensureKubeconfigs(opts.Server, string(ca.CertPEM()), tokens); err != nil {
		return nil, err
	}
	slices.Sort(p.Written)
	return p, nil
}

func (p *Paths) wrote(path string) {
	rel, err := filepath.Rel(p.Home, path)
	if err != nil {
		rel = path
	}
	p.Written = append(p.Written, rel)
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// ensureCA loads the CA or makes one. Half a CA (a certificate without its key or the reverse)
// is an error: making a new one would silently invalidate every kubeconfig already handed out.
func (p *Paths) ensureCA(now time.Time) (*pki.KeyPair, error) {
	crt, err := exists(p.CACert)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	key, err := exists(p.CAKey)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	switch {
	case crt && key:
		ca, err := pki.Read(p.CACert, p.CAKey)
		if err != nil {
			return nil, fmt.Errorf("bootstrap: load CA: %w", err)
		}
		return ca, nil
	case crt || key:
		return nil, fmt.Errorf("bootstrap: only one of %s and %s exists; restore the other or remove both to make a new CA (every kubeconfig must then be reissued)", p.CACert, p.CAKey)
	}
	ca, err := pki.NewCA(ClusterName+"-ca", now)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	if err := ca.Write(p.CACert, p.CAKey); err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	p.wrote(p.CACert)
	p.wrote(p.CAKey)
	return ca, nil
}

func (p *Paths) ensureServing(ca *pki.KeyPair, required []string, now time.Time) error {
	crt, err := exists(p.ServingCert)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if crt {
		cur, err := pki.Read(p.ServingCert, p.ServingKey)
		if err != nil {
			return fmt.Errorf("bootstrap: load serving certificate: %w", err)
		}
		if err := cur.Cert.CheckSignatureFrom(ca.Cert); err != nil {
			return fmt.Errorf("bootstrap: %s is not signed by %s; remove it to have it reissued: %w", p.ServingCert, p.CACert, err)
		}
		if pki.Covers(cur.Cert, required) && now.Add(renewBefore).Before(cur.Cert.NotAfter) {
			return nil
		}
	}
	// Interface addresses are added but not required: they change with every docker network
	// and simulated node, and reissuing for each would be churn without benefit.
	srv, err := pki.NewServing(ca, ClusterName+"-apiserver", slices.Concat(required, pki.LocalHosts()), now)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if err := srv.Write(p.ServingCert, p.ServingKey); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	p.wrote(p.ServingCert)
	p.wrote(p.ServingKey)
	return nil
}

// ensureTokens appends a record for every wanted identity the token file lacks, keeping the
// existing bytes as they are (comments and hand edits included), and returns user -> token.
func (p *Paths) ensureTokens(nodes []string) (map[string]string, error) {
	want := []Identity{Admin}
	for _, c := range Components {
		want = append(want, Identity{User: c.User})
	}
	for _, n := range nodes {
		want = append(want, Identity{User: NodeUser(n), Groups: []string{NodeGroup}})
	}
	data, err := os.ReadFile(p.Tokens)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("bootstrap: read token file: %w", err)
	}
	ids, err := parseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: token file %s: %w", p.Tokens, err)
	}
	byUser := map[string]string{}
	for tok, id := range ids {
		byUser[id.User] = tok
	}
	var add bytes.Buffer
	for _, id := range want {
		if _, ok := byUser[id.User]; ok {
			continue
		}
		tok, err := newToken()
		if err != nil {
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
		if id.UID, err = newUID(); err != nil {
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
		add.WriteString(formatToken(tok, id))
		byUser[id.User] = tok
	}
	if add.Len() == 0 {
		return byUser, nil
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	if err := kubeconfig.WriteFileAtomic(p.Tokens, append(data, add.Bytes()...), 0o600); err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	p.wrote(p.Tokens)
	return byUser, nil
}

func (p *Paths) ensureKubeconfigs(server, caPEM string, tokens map[string]string) error {
	files := map[string]string{p.AdminKubeconfig: Admin.User}
	for _, c := range Components {
		files[p.Components[c.Name]] = c.User
	}
	for n, path := range p.Nodes {
		files[path] = NodeUser(n)
	}
	for path, user := range files {
		ok, err := exists(path)
		if err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
		if ok {
			continue
		}
		cfg := kubeconfig.New(ClusterName, server, caPEM, user, tokens[user], "default")
		if err := kubeconfig.Write(path, cfg); err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
		p.wrote(path)
	}
	return nil
}
