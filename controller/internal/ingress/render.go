package ingress

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Ports nginx listens on in its pods.
const (
	HTTPPort = 80
	// HealthPort answers /healthz once a rendered configuration runs (the image's own
	// configuration does not listen there), which is the pods' readiness.
	HealthPort = 10254
)

// Render writes cfg as a complete nginx.conf for the minik8s/nginx image. A pure function:
// equal configs give equal bytes.
//
// Kubernetes' path semantics in nginx's terms: an Exact path is `location = p`; a Prefix path
// p matches p and everything under p/ element by element, which is `location = p` plus
// `location p/` (so /foo does not match /foobar); nginx picks the longest prefix itself, and an
// exact location wins over prefixes, as Kubernetes wants. A Prefix path whose exact form an
// Exact path of the same host already has leaves it to the Exact one.
func Render(cfg Routes) []byte {
	var b strings.Builder
	w := func(indent int, format string, args ...any) {
		b.WriteString(strings.Repeat("    ", indent))
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	w(0, "# Rendered by the minik8s Ingress controller from %d Ingress(es). Replaced on every change: edit the Ingresses, not this file.", cfg.Ingresses)
	w(0, "user www-data;")
	w(0, "worker_processes auto;")
	w(0, "pid /run/nginx.pid;")
	w(0, "error_log stderr notice;")
	// A reload lets old workers finish their requests; this bounds how long a long-lived
	// connection (a WebSocket, say) keeps one alive.
	w(0, "worker_shutdown_timeout 240s;")
	w(0, "")
	w(0, "events {")
	w(1, "worker_connections 4096;")
	w(0, "}")
	w(0, "")
	w(0, "http {")
	for _, l := range []string{
		"include /etc/nginx/mime.types;",
		"default_type application/octet-stream;",
		"access_log /dev/stdout;",
		"sendfile on;",
		"keepalive_timeout 65s;",
		"server_tokens off;",
		"server_names_hash_bucket_size 128;",
		"server_names_hash_max_size 4096;",
		"",
		"map $http_upgrade $connection_upgrade {",
		"    default upgrade;",
		"    '' close;",
		"}",
		"",
		"proxy_http_version 1.1;",
		"proxy_set_header Host $host;",
		"proxy_set_header Upgrade $http_upgrade;",
		"proxy_set_header Connection $connection_upgrade;",
		"proxy_set_header X-Real-IP $remote_addr;",
		"proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
		"proxy_set_header X-Forwarded-Host $host;",
		"proxy_set_header X-Forwarded-Proto $scheme;",
		"proxy_connect_timeout 5s;",
		"proxy_read_timeout 60s;",
		"proxy_send_timeout 60s;",
	} {
		w(1, "%s", l)
	}
	w(0, "")
	w(1, "# Readiness and counters of this nginx.")
	w(1, "server {")
	w(2, "listen %d;", HealthPort)
	w(2, "access_log off;")
	w(2, "location = /healthz {")
	w(3, "default_type text/plain;")
	w(3, "return 200 \"ok\\n\";")
	w(2, "}")
	w(2, "location = /nginx_status {")
	w(3, "stub_status;")
	w(2, "}")
	w(1, "}")
	writeServer(w, cfg.CatchAll, true)
	for _, s := range cfg.Servers {
		writeServer(w, s, false)
	}
	w(0, "}")
	return []byte(b.String())
}

// Hash is the short hash a pod's delivered configuration is recorded by.
func Hash(conf []byte) string {
	sum := sha256.Sum256(conf)
	return hex.EncodeToString(sum[:8])
}

func writeServer(w func(int, string, ...any), s Server, catchAll bool) {
	w(0, "")
	if catchAll {
		w(1, "# Requests for hosts no rule names.")
		w(1, "server {")
		w(2, "listen %d default_server;", HTTPPort)
		w(2, "server_name _;")
	} else {
		w(1, "server {")
		w(2, "listen %d;", HTTPPort)
		w(2, "server_name %s;", serverName(s.Host))
	}
	exact := map[string]bool{}
	for _, l := range s.Locations {
		if l.Exact {
			exact[l.Path] = true
		}
	}
	hasRoot := false
	for _, l := range s.Locations {
		switch {
		case l.Exact:
			writeLocation(w, "= "+quote(l.Path), l.Backend, l.Ingress)
		case l.Path == "/":
			hasRoot = true
			writeLocation(w, "/", l.Backend, l.Ingress)
		default:
			if !exact[l.Path] {
				writeLocation(w, "= "+quote(l.Path), l.Backend, l.Ingress)
			}
			writeLocation(w, quote(l.Path+"/"), l.Backend, l.Ingress)
		}
	}
	if !hasRoot {
		if s.Fallback != nil {
			writeLocation(w, "/", *s.Fallback, "default backend")
		} else {
			w(2, "location / {")
			w(3, "return 404;")
			w(2, "}")
		}
	}
	w(1, "}")
}

func writeLocation(w func(int, string, ...any), match string, b Backend, from string) {
	w(2, "location %s {", match)
	if b.Address == "" {
		w(3, "# %s: %s", from, b.Problem)
		w(3, "return 503;")
	} else {
		w(3, "# %s: %s", from, b.Service)
		w(3, "proxy_pass http://%s;", b.Address)
	}
	w(2, "}")
}

// serverName is nginx's server_name for a rule's host: a wildcard host matches exactly one
// more DNS label, so it becomes a regular expression (nginx's own *.example.com matches any
// number).
func serverName(host string) string {
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		return `~^[^.]+\.` + strings.ReplaceAll(rest, ".", `\.`) + `$`
	}
	return host
}

// quote makes a location string: paths are checked to hold no quote, backslash, $ or space.
func quote(p string) string { return `"` + p + `"` }
