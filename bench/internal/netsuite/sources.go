package netsuite

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// upstreamResolver is the first nameserver of a resolv.conf as host:port: the server the
// node's own lookups go to first, and the one kubeproxy forwards to first.
func upstreamResolver(r io.Reader) (string, error) {
	cc, err := dns.ClientConfigFromReader(r)
	if err != nil {
		return "", fmt.Errorf("parse resolv.conf: %w", err)
	}
	if len(cc.Servers) == 0 {
		return "", errors.New("resolv.conf names no nameserver")
	}
	return net.JoinHostPort(cc.Servers[0], cc.Port), nil
}

// sourcePartName is what apt accepts as a file name in sources.list.d; it ignores others
// (backups, files disabled by renaming).
var sourcePartName = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.(list|sources)$`)

// aptSourceFiles lists the files apt reads, in its order: each path that is a file, and in
// each path that is a directory its .list and .sources files sorted by name. Missing paths
// are skipped.
func aptSourceFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && sourcePartName.MatchString(e.Name()) {
				names = append(names, e.Name())
			}
		}
		slices.Sort(names)
		for _, n := range names {
			files = append(files, filepath.Join(p, n))
		}
	}
	return files, nil
}

// outsideName is the host of the first http or https apt source in the files at paths
// (sources.list and sources.list.d): a name outside the cluster this machine resolves
// anyway, read at run time so that no mirror is named in the repository.
func outsideName(paths []string) (string, error) {
	files, err := aptSourceFiles(paths)
	if err != nil {
		return "", fmt.Errorf("apt sources: %w", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("apt sources: %w", err)
		}
		var uris []string
		if strings.HasSuffix(f, ".sources") {
			uris = deb822URIs(string(data))
		} else {
			uris = oneLineURIs(string(data))
		}
		if host, ok := firstHTTPHost(uris); ok {
			return host, nil
		}
	}
	return "", fmt.Errorf("no http or https source in %s", strings.Join(paths, ", "))
}

// oneLineURIs reads the URIs of sources.list's one-line format:
// "deb [ options ] uri suite components", "#" starting a comment.
func oneLineURIs(text string) []string {
	var uris []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "deb" && f[0] != "deb-src") {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			// Options run to the field that closes the bracket, possibly this one.
			end := slices.IndexFunc(f, func(s string) bool { return strings.HasSuffix(s, "]") })
			if end < 0 {
				continue
			}
			f = f[end+1:]
		}
		if len(f) > 0 {
			uris = append(uris, f[0])
		}
	}
	return uris
}

// deb822URIs reads the URIs of the deb822 format (.sources): paragraphs of "Field: value"
// separated by blank lines, continuation lines indented, "#" lines comments; a paragraph with
// "Enabled: no" is skipped.
func deb822URIs(text string) []string {
	var uris []string
	fields := map[string]string{}
	last := ""
	flush := func() {
		if !strings.EqualFold(strings.TrimSpace(fields["enabled"]), "no") {
			uris = append(uris, strings.Fields(fields["uris"])...)
		}
		fields, last = map[string]string{}, ""
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	flush()
	return uris
}

// firstHTTPHost is the host name of the first http or https URI that names its host
// (an address has nothing to look up).
func firstHTTPHost(uris []string) (string, bool) {
	for _, s := range uris {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			continue
		}
		if net.ParseIP(u.Hostname()) != nil {
			continue
		}
		return u.Hostname(), true
	}
	return "", false
}
