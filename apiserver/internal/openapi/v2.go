package openapi

import (
	"bytes"
	"cmp"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"minik8s.io/shared/scheme"
)

// V2Path is where the OpenAPI v2 document is served.
const V2Path = "/openapi/v2"

// Media types of the v2 document. Clients ask for protobuf by either name (client-go and so
// Helm and kubectl send the older one); the answer is labelled with the newer, as Kubernetes
// does.
const (
	MediaTypeJSON               = "application/json"
	MediaTypeProtobuf           = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	MediaTypeProtobufDeprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
)

// encoding is the document in one media type.
type encoding struct {
	contentType string
	body        []byte
	etag        string
}

func newEncoding(contentType string, body []byte) encoding {
	return encoding{contentType: contentType, body: body, etag: fmt.Sprintf(`"%X"`, sha512.Sum512(body))}
}

// V2 is the one OpenAPI v2 (Swagger 2.0) document that describes every served group version,
// as kube-apiserver serves it for Helm, kubectl's client-side validation and
// client-go's OpenAPISchema. It is encoded once, as JSON and as gnostic's protobuf.
type V2 struct {
	json, protobuf encoding
}

// JSON is the document as JSON.
func (v *V2) JSON() []byte { return v.json.body }

// Protobuf is the document as a gnostic openapi_v2.Document in protobuf.
func (v *V2) Protobuf() []byte { return v.protobuf.body }

// BuildV2 generates the v2 document of every group version in resources from the same Go
// types, and with the same paths, as Build's v3 documents. version is the server version
// shown in its info.
func BuildV2(resources []*scheme.Resource, version string) (*V2, error) {
	return generateV2(resources, version, nil)
}

// generateV2 generates the v2 document of resources, taking custom resources' schemas from
// defs.
func generateV2(resources []*scheme.Resource, version string, defs Definitions) (*V2, error) {
	doc, err := swagger(resources, version, defs)
	if err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode openapi v2: %w", err)
	}
	// Parsing our own JSON is how Kubernetes makes the protobuf too; it also proves the
	// document is valid Swagger 2.0, since gnostic rejects what the format does not allow.
	parsed, err := openapiv2.ParseDocument(raw)
	if err != nil {
		return nil, fmt.Errorf("parse openapi v2: %w", err)
	}
	pb, err := proto.MarshalOptions{Deterministic: true}.Marshal(parsed)
	if err != nil {
		return nil, fmt.Errorf("encode openapi v2 as protobuf: %w", err)
	}
	return &V2{json: newEncoding(MediaTypeJSON, raw), protobuf: newEncoding(MediaTypeProtobuf, pb)}, nil
}

func swagger(resources []*scheme.Resource, version string, defs Definitions) (*spec.Swagger, error) {
	s := newSchemas(v2Dialect)
	routes, err := collect(s, resources, defs)
	if err != nil {
		return nil, err
	}
	paths := make(map[string]spec.PathItem, len(routes))
	for path, rt := range routes {
		paths[path] = rt.v2()
	}
	return &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: version}},
		Paths:       &spec.Paths{Paths: paths},
		Definitions: s.defs,
		SecurityDefinitions: spec.SecurityDefinitions{"BearerToken": &spec.SecurityScheme{SecuritySchemeProps: spec.SecuritySchemeProps{
			Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication",
		}}},
		Security: []map[string][]string{{"BearerToken": {}}},
	}}, nil
}

// ServeHTTP answers GET and HEAD V2Path with the encoding the Accept header prefers. Each
// encoding has its own ETag (a hash of its bytes), so If-None-Match answers 304 for the one
// the client holds.
func (v *V2) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path != V2Path {
		http.NotFound(w, r)
		return
	}
	e := &v.json
	if wantsProtobuf(r.Header.Values("Accept")) {
		e = &v.protobuf
	}
	h := w.Header()
	h.Add("Vary", "Accept")
	h.Set("Content-Type", e.contentType)
	h.Set("ETag", e.etag)
	h.Set("Cache-Control", "no-cache, private")
	// ServeContent answers If-None-Match, HEAD and ranges; no modification time, so the
	// ETag alone decides.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(e.body))
}

// wantsProtobuf reports whether the Accept header prefers protobuf to JSON: the media range
// with the highest quality wins, an exact type before a wildcard, then the first listed.
// Anything that names neither (or no header) gets JSON.
func wantsProtobuf(accept []string) bool {
	type choice struct {
		protobuf    bool
		q           float64
		specificity int
	}
	var choices []choice
	for _, header := range accept {
		for _, clause := range strings.Split(header, ",") {
			mediaType, params, _ := strings.Cut(clause, ";")
			mediaType = strings.ToLower(strings.TrimSpace(mediaType))
			c := choice{q: 1, specificity: 2}
			switch mediaType {
			case MediaTypeProtobuf, MediaTypeProtobufDeprecated:
				c.protobuf = true
			case MediaTypeJSON:
			case "application/*":
				c.specificity = 1
			case "*/*":
				c.specificity = 0
			default:
				continue
			}
			for _, p := range strings.Split(params, ";") {
				k, val, _ := strings.Cut(p, "=")
				if strings.TrimSpace(k) == "q" {
					if q, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						c.q = q
					}
				}
			}
			if c.q > 0 {
				choices = append(choices, c)
			}
		}
	}
	if len(choices) == 0 {
		return false
	}
	slices.SortStableFunc(choices, func(a, b choice) int {
		if a.q != b.q {
			return cmp.Compare(b.q, a.q)
		}
		return cmp.Compare(b.specificity, a.specificity)
	})
	return choices[0].protobuf
}
