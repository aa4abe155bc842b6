package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const htmlPrefix = "/api/v1/namespaces/ns/services/web:80/proxy"

const page = `<!DOCTYPE html><html><head><link href="/static/app.css" rel="stylesheet"><script src="/static/app.js"></script></head>` +
	`<body><a href="/graph?g0.expr=up&amp;x=1">graph</a> <a href="relative">r</a> <A HREF="https://example.com/">out</A>` +
	`<img src="/logo.png"/><form action="/query"></form><p data-x="/kept">text &amp; /not-a-link</p></body></html>`

const rewrittenPage = `<!DOCTYPE html><html><head><link href="` + htmlPrefix + `/static/app.css" rel="stylesheet"><script src="` + htmlPrefix + `/static/app.js"></script></head>` +
	`<body><a href="` + htmlPrefix + `/graph?g0.expr=up&amp;x=1">graph</a> <a href="relative">r</a> <A HREF="https://example.com/">out</A>` +
	`<img src="` + htmlPrefix + `/logo.png"/><form action="` + htmlPrefix + `/query"></form><p data-x="/kept">text &amp; /not-a-link</p></body></html>`

func gzipped(t *testing.T, s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = io.WriteString(zw, s)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The links of a proxied HTML page lead back through the proxy, whether the page comes
// plain or gzipped; other answers pass untouched.
func TestRewriteHTMLResponse(t *testing.T) {
	rewrite := func(u string) string { return rewriteLocation(u, "10.244.0.5:8080", "localhost:8001", htmlPrefix) }
	for _, tc := range []struct {
		name, contentType, encoding string
		code                        int
		want                        string
	}{
		{"plain", "text/html; charset=utf-8", "", 200, rewrittenPage},
		{"gzip", "text/html", "gzip", 200, rewrittenPage},
		{"an error page", "text/html", "", 404, rewrittenPage},
		{"not html", "application/json", "", 200, page},
		{"an encoding not understood", "text/html", "br", 200, page},
		{"not modified", "text/html", "", 304, page},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := page
			if tc.encoding == "gzip" {
				body = gzipped(t, page)
			}
			resp := &http.Response{StatusCode: tc.code, Header: http.Header{"Content-Type": {tc.contentType}}, Body: io.NopCloser(strings.NewReader(body)),
				ContentLength: int64(len(body))}
			if tc.encoding != "" {
				resp.Header.Set("Content-Encoding", tc.encoding)
			}
			resp.Header.Set("Content-Length", "1")
			if isHTML(resp) {
				rewriteHTMLResponse(resp, rewrite, nil)
			}
			var r io.Reader = resp.Body
			if tc.encoding == "gzip" {
				var err error
				if r, err = gzip.NewReader(resp.Body); err != nil {
					t.Fatal(err)
				}
			}
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if changed := tc.want != page; changed && (resp.ContentLength != -1 || resp.Header.Get("Content-Length") != "") {
				t.Errorf("a rewritten page keeps its length: %d %q", resp.ContentLength, resp.Header.Get("Content-Length"))
			}
		})
	}
}

// Markup the rewriter does not touch comes out as it went in, odd spelling included.
func TestRewriteHTMLKeepsBytes(t *testing.T) {
	in := `<!-- c --><DIV Class=a>x</DIV><script>if (a < b && c) { document.write("<a href='/x'>") }</script><br/><a name=top>t</a>`
	var out bytes.Buffer
	if err := rewriteHTML(strings.NewReader(in), &out, func(s string) string { return "/p" + s }); err != nil {
		t.Fatal(err)
	}
	if out.String() != in {
		t.Errorf("got\n%s\nwant\n%s", out.String(), in)
	}
}
