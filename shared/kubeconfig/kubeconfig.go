package kubeconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// Config is a kubeconfig file. Only the fields minik8s uses are modelled; unknown fields of the
// standard format (client certificates, exec plugins, extensions) are ignored on read.
type Config struct {
	APIVersion     string         `json:"apiVersion" yaml:"apiVersion"`
	Kind           string         `json:"kind" yaml:"kind"`
	Preferences    struct{}       `json:"preferences" yaml:"preferences"`
	Clusters       []NamedCluster `json:"clusters" yaml:"clusters"`
	Users          []NamedUser    `json:"users" yaml:"users"`
	Contexts       []NamedContext `json:"contexts" yaml:"contexts"`
	CurrentContext string         `json:"current-context" yaml:"current-context"`

	// path is where the file was read from; relative file references resolve against its
	// directory, as kubectl does.
	path string
}

// NamedCluster is one entry of clusters.
type NamedCluster struct {
	Name    string  `json:"name" yaml:"name"`
	Cluster Cluster `json:"cluster" yaml:"cluster"`
}

// Cluster says where the apiserver is and how to trust it.
type Cluster struct {
	Server               string `json:"server" yaml:"server"`
	CertificateAuthority string `json:"certificate-authority,omitempty" yaml:"certificate-authority,omitempty"`
	// CertificateAuthorityData is PEM in memory; the file carries it base64-encoded.
	CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty" yaml:"certificate-authority-data,omitempty"`
	InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify,omitempty" yaml:"insecure-skip-tls-verify,omitempty"`
	TLSServerName            string `json:"tls-server-name,omitempty" yaml:"tls-server-name,omitempty"`
}

// NamedUser is one entry of users.
type NamedUser struct {
	Name string   `json:"name" yaml:"name"`
	User AuthInfo `json:"user" yaml:"user"`
}

// AuthInfo holds the credentials of a user; minik8s uses bearer tokens only.
type AuthInfo struct {
	Token     string `json:"token,omitempty" yaml:"token,omitempty"`
	TokenFile string `json:"tokenFile,omitempty" yaml:"tokenFile,omitempty"`
}

// NamedContext is one entry of contexts.
type NamedContext struct {
	Name    string  `json:"name" yaml:"name"`
	Context Context `json:"context" yaml:"context"`
}

// Context ties a cluster to a user and a default namespace.
type Context struct {
	Cluster   string `json:"cluster" yaml:"cluster"`
	User      string `json:"user" yaml:"user"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
}

// Resolved is one context with its file references read: what a client needs to connect.
type Resolved struct {
	Context, Cluster, User string
	Server                 string
	CAData                 []byte // PEM; empty means the system roots
	Insecure               bool
	TLSServerName          string
	Token                  string
	// Namespace is the context's namespace, "default" when it names none.
	Namespace string
}

// ErrNoContext means the kubeconfig names no usable context.
var ErrNoContext = errors.New("no usable context in kubeconfig")

// Home is the minik8s state directory: $MINIK8S_HOME, else ~/.minik8s.
func Home() (string, error) {
	if h := os.Getenv("MINIK8S_HOME"); h != "" {
		return h, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find home directory: %w", err)
	}
	return filepath.Join(home, ".minik8s"), nil
}

// DefaultPath is the first entry of $KUBECONFIG, else $MINIK8S_HOME/kubeconfig, else
// ~/.minik8s/kubeconfig.
func DefaultPath() string {
	for _, p := range filepath.SplitList(os.Getenv("KUBECONFIG")) {
		// Merging several files is not supported; the first is also the one we write to.
		if p != "" {
			return p
		}
	}
	home, err := Home()
	if err != nil {
		// Without a home the relative path still gives a readable "no such file" error later.
		home = ".minik8s"
	}
	return filepath.Join(home, "kubeconfig")
}

// Load reads and parses the kubeconfig at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg.path = path
	return cfg, nil
}

// Parse decodes kubeconfig YAML or JSON. Relative file references in a parsed config resolve
// against the working directory; Load resolves them against the file's directory.
func Parse(data []byte) (*Config, error) {
	var cfg Config
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("parse kubeconfig: %w", err)
	}
	if cfg.Kind != "" && cfg.Kind != "Config" {
		return nil, fmt.Errorf("parse kubeconfig: kind is %q, want Config", cfg.Kind)
	}
	return &cfg, nil
}

// Marshal encodes cfg as YAML, filling apiVersion and kind.
func Marshal(cfg *Config) ([]byte, error) {
	out := *cfg
	if out.APIVersion == "" {
		out.APIVersion = "v1"
	}
	if out.Kind == "" {
		out.Kind = "Config"
	}
	data, err := yaml.Marshal(&out)
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig: %w", err)
	}
	return data, nil
}

// New builds a config with one cluster, one user and one current context named user@cluster,
// the shape the setup writes for the admin and for each component. caData is PEM; empty means
// the system roots.
func New(clusterName, server, caData, user, token, namespace string) *Config {
	ctx := user + "@" + clusterName
	c := &Config{
		APIVersion:     "v1",
		Kind:           "Config",
		Clusters:       []NamedCluster{{Name: clusterName, Cluster: Cluster{Server: server}}},
		Users:          []NamedUser{{Name: user, User: AuthInfo{Token: token}}},
		Contexts:       []NamedContext{{Name: ctx, Context: Context{Cluster: clusterName, User: user, Namespace: namespace}}},
		CurrentContext: ctx,
	}
	if caData != "" {
		c.Clusters[0].Cluster.CertificateAuthorityData = []byte(caData)
	}
	return c
}

// Write saves cfg to path with owner-only permissions, since it holds a token.
func Write(path string, cfg *Config) error {
	data, err := Marshal(cfg)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, data, 0o600)
}

// WriteFileAtomic writes data to path through a temporary file in the same directory and a
// rename, creating the parent directory (0700) when missing, so a reader never sees half a
// file and a crash leaves the old one. Key and token files use it too: a truncated key left
// by a crash would otherwise count as existing material.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Resolve returns the connection settings of the named context, or of current-context when
// context is empty (or of the only context, when there is one and no current-context),
// reading the CA file and token file it refers to.
func (c *Config) Resolve(context string) (*Resolved, error) {
	if context == "" {
		context = c.CurrentContext
	}
	if context == "" {
		if len(c.Contexts) != 1 {
			return nil, fmt.Errorf("current-context is not set: %w", ErrNoContext)
		}
		context = c.Contexts[0].Name
	}
	kctx, ok := find(c.Contexts, context, func(n NamedContext) string { return n.Name })
	if !ok {
		return nil, fmt.Errorf("context %q not found: %w", context, ErrNoContext)
	}
	cl, ok := find(c.Clusters, kctx.Context.Cluster, func(n NamedCluster) string { return n.Name })
	if !ok {
		return nil, fmt.Errorf("context %q: cluster %q not found in kubeconfig", context, kctx.Context.Cluster)
	}
	if cl.Cluster.Server == "" {
		return nil, fmt.Errorf("context %q: cluster %q has no server", context, cl.Name)
	}
	r := &Resolved{
		Context:       context,
		Cluster:       cl.Name,
		User:          kctx.Context.User,
		Server:        cl.Cluster.Server,
		CAData:        cl.Cluster.CertificateAuthorityData,
		Insecure:      cl.Cluster.InsecureSkipTLSVerify,
		TLSServerName: cl.Cluster.TLSServerName,
		Namespace:     kctx.Context.Namespace,
	}
	if r.Namespace == "" {
		r.Namespace = "default"
	}
	if len(r.CAData) == 0 && cl.Cluster.CertificateAuthority != "" {
		ca, err := os.ReadFile(c.resolvePath(cl.Cluster.CertificateAuthority))
		if err != nil {
			return nil, fmt.Errorf("cluster %q: read certificate-authority: %w", cl.Name, err)
		}
		r.CAData = ca
	}
	if kctx.Context.User == "" {
		return r, nil
	}
	u, ok := find(c.Users, kctx.Context.User, func(n NamedUser) string { return n.Name })
	if !ok {
		return nil, fmt.Errorf("context %q: user %q not found in kubeconfig", context, kctx.Context.User)
	}
	r.Token = u.User.Token
	if r.Token == "" && u.User.TokenFile != "" {
		tok, err := os.ReadFile(c.resolvePath(u.User.TokenFile))
		if err != nil {
			return nil, fmt.Errorf("user %q: read tokenFile: %w", u.Name, err)
		}
		r.Token = strings.TrimSpace(string(tok))
	}
	return r, nil
}

func (c *Config) resolvePath(p string) string {
	if filepath.IsAbs(p) || c.path == "" {
		return p
	}
	return filepath.Join(filepath.Dir(c.path), p)
}

func find[T any](items []T, name string, key func(T) string) (T, bool) {
	for _, it := range items {
		if key(it) == name {
			return it, true
		}
	}
	var zero T
	return zero, false
}
