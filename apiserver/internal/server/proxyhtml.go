package server

import (
	"compress/flate"
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlURLAttrs are the attributes that hold URLs, by element, as kube-apiserver's proxy
// rewrites them.
var htmlURLAttrs = map[atom.Atom][]string{
	atom.A:          {"href"},
	atom.Applet:     {"codebase"},
	atom.Area:       {"href"},
	atom.Audio:      {"src"},
	atom.Base:       {"href"},
	atom.Blockquote: {"cite"},
	atom.Body:       {"background"},
	atom.Button:     {"formaction"},
	atom.Command:    {"icon"},
	atom.Del:        {"cite"},
	atom.Embed:      {"src"},
	atom.Form:       {"action"},
	atom.Frame:      {"longdesc", "src"},
	atom.Head:       {"profile"},
	atom.Html:       {"manifest"},
	atom.Iframe:     {"longdesc", "src"},
	atom.Img:        {"longdesc", "src", "usemap"},
	atom.Input:      {"src", "usemap", "formaction"},
	atom.Ins:        {"cite"},
	atom.Link:       {"href"},
	atom.Object:     {"classid", "codebase", "data", "usemap"},
	atom.Q:          {"cite"},
	atom.Script:     {"src"},
	atom.Source:     {"src"},
	atom.Video:      {"poster", "src"},
}

// isHTML reports whether resp carries an HTML page.
func isHTML(resp *http.Response) bool {
	if resp.StatusCode < 200 || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		return false
	}
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	return strings.TrimSpace(strings.ToLower(ct)) == "text/html"
}

// rewriteHTMLResponse replaces resp's body with the same page whose links pass through
// rewrite, produced as the original is read (a large page is never held whole). A body in
// an encoding other than gzip or deflate is left as it is.
func rewriteHTMLResponse(resp *http.Response, rewrite func(string) string, log *slog.Logger) {
	encoding := resp.Header.Get("Content-Encoding")
	if encoding != "" && encoding != "gzip" && encoding != "deflate" {
		return
	}
	orig := resp.Body
	pr, pw := io.Pipe()
	go func() {
		defer orig.Close()
		err := rewriteEncoded(orig, pw, encoding, rewrite)
		if err != nil && log != nil {
			log.Debug("rewrite proxied html", "err", err)
		}
		_ = pw.CloseWithError(err)
	}()
	resp.Body = pr
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
}

// rewriteEncoded decodes src, rewrites its links, and encodes the result to dst the same way.
func rewriteEncoded(src io.Reader, dst io.Writer, encoding string, rewrite func(string) string) error {
	switch encoding {
	case "gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return err
		}
		zw := gzip.NewWriter(dst)
		if err := rewriteHTML(zr, zw, rewrite); err != nil {
			return err
		}
		return zw.Close()
	case "deflate":
		zw, err := flate.NewWriter(dst, flate.DefaultCompression)
		if err != nil {
			return err
		}
		if err := rewriteHTML(flate.NewReader(src), zw, rewrite); err != nil {
			return err
		}
		return zw.Close()
	}
	return rewriteHTML(src, dst, rewrite)
}

// rewriteHTML copies the page token by token, each start tag with its URL attributes
// rewritten and everything else byte for byte.
func rewriteHTML(src io.Reader, dst io.Writer, rewrite func(string) string) error {
	z := html.NewTokenizer(src)
	for {
		tt := z.Next()
		var err error
		switch tt {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				return nil
			}
			return z.Err()
		case html.StartTagToken, html.SelfClosingTagToken:
			// Token lowercases names and unescapes values in the tokenizer's buffer, so
			// the raw bytes are kept first.
			raw := append([]byte(nil), z.Raw()...)
			tok := z.Token()
			attrs, ok := htmlURLAttrs[tok.DataAtom]
			if !ok {
				_, err = dst.Write(raw)
				break
			}
			changed := false
			for i, a := range tok.Attr {
				for _, name := range attrs {
					if a.Namespace == "" && a.Key == name {
						if v := rewrite(a.Val); v != a.Val {
							tok.Attr[i].Val, changed = v, true
						}
					}
				}
			}
			if changed {
				_, err = io.WriteString(dst, tok.String())
			} else {
				_, err = dst.Write(raw)
			}
		default:
			_, err = dst.Write(z.Raw())
		}
		if err != nil {
			return err
		}
	}
}
