package netsuite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUpstreamResolver(t *testing.T) {
	tests := []struct {
		name, conf, want string
		wantErr          bool
	}{
		{name: "one", conf: "nameserver 10.255.255.53\n", want: "10.255.255.53:53"},
		{name: "first of several, comments and options", conf: "# written by dhcp\n; old style\nsearch example.internal\noptions ndots:2 timeout:1\nnameserver 192.0.2.53\nnameserver 192.0.2.54\n", want: "192.0.2.53:53"},
		{name: "IPv6", conf: "nameserver fd00::53\n", want: "[fd00::53]:53"},
		{name: "none", conf: "search example.internal\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := upstreamResolver(strings.NewReader(tt.conf))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("upstreamResolver = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("upstreamResolver = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestOneLineURIs(t *testing.T) {
	text := `# deb http://commented.example/debian bookworm main
deb cdrom:[Debian GNU/Linux 12]/ bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/a.gpg] https://one.example/debian bookworm main
deb [arch=amd64] http://two.example/debian bookworm main # trailing comment
deb-src  http://three.example/debian   bookworm main
rpm http://not-apt.example/ x
deb [unclosed http://broken.example/ bookworm
`
	want := []string{"cdrom:[Debian", "https://one.example/debian", "http://two.example/debian", "http://three.example/debian"}
	if diff := cmp.Diff(want, oneLineURIs(text)); diff != "" {
		t.Errorf("oneLineURIs (-want +got):\n%s", diff)
	}
}

func TestDeb822URIs(t *testing.T) {
	text := `Types: deb
# http://commented.example/archive/debian/20250520T000000Z
URIs: http://one.example/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
Enabled: no
URIs: http://disabled.example/debian
Suites: bookworm

Types: deb deb-src
URIs: https://two.example/debian
 http://three.example/debian
Suites: bookworm
`
	want := []string{"http://one.example/debian", "https://two.example/debian", "http://three.example/debian"}
	if diff := cmp.Diff(want, deb822URIs(text)); diff != "" {
		t.Errorf("deb822URIs (-want +got):\n%s", diff)
	}
}

func TestFirstHTTPHost(t *testing.T) {
	tests := []struct {
		uris   []string
		want   string
		wantOK bool
	}{
		{uris: []string{"cdrom:[Debian", "file:/srv/mirror", "ftp://old.example/", "https://mirror.example:8443/debian"}, want: "mirror.example", wantOK: true},
		{uris: []string{"http://192.0.2.9/debian", "http://[fd00::9]/debian", "http://named.example/"}, want: "named.example", wantOK: true},
		{uris: []string{"mirror+file:/etc/apt/mirrors.txt"}},
		{},
	}
	for _, tt := range tests {
		got, ok := firstHTTPHost(tt.uris)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("firstHTTPHost(%q) = %q, %v; want %q, %v", tt.uris, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestOutsideName(t *testing.T) {
	write := func(t *testing.T, path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		files   map[string]string
		want    string
		wantErr bool
	}{
		{
			name: "sources.list comes first",
			files: map[string]string{
				"sources.list":                 "deb http://list.example/debian bookworm main\n",
				"sources.list.d/a.sources":     "Types: deb\nURIs: http://part.example/debian\nSuites: bookworm\n",
				"sources.list.d/0-early.list":  "deb http://early.example/debian bookworm main\n",
				"sources.list.d/z.list.backup": "deb http://backup.example/debian bookworm main\n",
			},
			want: "list.example",
		},
		{
			name: "parts by name, other extensions ignored",
			files: map[string]string{
				"sources.list.d/debian.sources":                 "Types: deb\n# http://snapshot.example/\nURIs: http://part.example/debian\nSuites: bookworm\n",
				"sources.list.d/cloud.list.disabled-by-someone": "deb https://disabled.example/apt main\n",
				"sources.list.d/b.list":                         "deb cdrom:[x]/ bookworm main\n",
			},
			want: "part.example",
		},
		{
			name:    "no http source",
			files:   map[string]string{"sources.list.d/local.list": "deb file:/srv/mirror bookworm main\n"},
			wantErr: true,
		},
		{name: "nothing at all", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				write(t, filepath.Join(dir, name), text)
			}
			got, err := outsideName([]string{filepath.Join(dir, "sources.list"), filepath.Join(dir, "sources.list.d")})
			if tt.wantErr {
				if err == nil {
					t.Fatalf("outsideName = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("outsideName = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
