package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// MaxBodyBytes is the largest request body accepted, as in Kubernetes.
const MaxBodyBytes = 3 << 20

// protobufCodec reads and writes the Kubernetes protobuf envelope; only k8s.io/api kinds have a
// protobuf form.
var protobufCodec = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// readLimited reads a body of at most MaxBodyBytes; it may be empty.
func readLimited(c *gin.Context) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(c.Request.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, apierror.New(apierror.ErrBadRequest, "reading request body: %v", err)
	}
	if len(data) > MaxBodyBytes {
		return nil, apierror.New(apierror.ErrRequestTooLarge, "the request body is larger than %d bytes", MaxBodyBytes)
	}
	return data, nil
}

// maxDrainBytes bounds what drainBody reads of a refused request's body; past it the
// connection closes after the answer, as net/http closes it past 256 KiB.
const maxDrainBytes = 4 * MaxBodyBytes

// drainBody reads and drops what is left of the request body before an error answer. Many
// refusals come before the body is read (authentication, an unknown path, a content type the
// resource does not take, a body over the limit). net/http sends such an answer at once and,
// when the connection is to close (Connection: close, or more than 256 KiB left unread),
// closes it half a second later with the body still arriving: a client still sending then
// gets a reset, and loses the answer. Read first, the body is all in and the close is clean.
func drainBody(c *gin.Context) {
	if c.Request.Body == nil || c.Request.ContentLength == 0 {
		return
	}
	_, _ = io.CopyN(io.Discard, c.Request.Body, maxDrainBytes)
}

// readBody reads a body that must not be empty.
func readBody(c *gin.Context) ([]byte, error) {
	data, err := readLimited(c)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, apierror.New(apierror.ErrBadRequest, "the request body is empty")
	}
	return data, nil
}

// decodeStrict decodes JSON into obj case-sensitively, reporting unknown and duplicate fields
// according to the field validation directive: an error under Strict, warnings under Warn.
func decodeStrict(c *gin.Context, data []byte, obj any, directive string) error {
	strictErrs, err := kjson.UnmarshalStrict(data, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return apierror.New(apierror.ErrBadRequest, "the body of the request could not be decoded: %v", cleanJSONError(err))
	}
	return applyDirective(c, strictErrs, directive)
}

// applyDirective applies the field validation directive to the strict decoding errors found.
func applyDirective(c *gin.Context, strictErrs []error, directive string) error {
	if len(strictErrs) == 0 || directive == metav1.FieldValidationIgnore {
		return nil
	}
	msgs := make([]string, len(strictErrs))
	for i, e := range strictErrs {
		msgs[i] = e.Error()
	}
	if directive == metav1.FieldValidationStrict {
		return apierror.New(apierror.ErrBadRequest, "strict decoding error: %s", strings.Join(msgs, ", "))
	}
	for _, m := range msgs {
		c.Writer.Header().Add("Warning", fmt.Sprintf("299 - %q", m))
	}
	return nil
}

func cleanJSONError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at offset %d: %v", se.Offset, se)
	}
	return err.Error()
}

// decodeProtobuf reads a protobuf envelope into into, which must be the kind the envelope
// names; want lists the kinds accepted (any group version of the kind when empty).
func decodeProtobuf(data []byte, into runtime.Object, want schema.GroupVersionKind) error {
	_, gvk, err := protobufCodec.Decode(data, nil, into)
	if err != nil {
		return apierror.New(apierror.ErrBadRequest, "the protobuf body could not be decoded: %v", err)
	}
	if gvk != nil && (gvk.Kind != want.Kind || (want.Version != "" && gvk.GroupVersion() != want.GroupVersion())) {
		return apierror.New(apierror.ErrBadRequest, "the kind in the body (%s) does not match the kind of the endpoint (%s)", gvk, want)
	}
	into.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return nil
}

// decodeInto decodes a body of any accepted format into obj, an object of kind want (a
// version left empty accepts the kind in any group version, as options and bindings are).
func decodeInto(c *gin.Context, res *scheme.Resource, data []byte, obj runtime.Object, want schema.GroupVersionKind, directive string) error {
	format, err := bodyFormat(c, res)
	if err != nil {
		return err
	}
	switch format {
	case protobufMediaType:
		return decodeProtobuf(data, obj, want)
	case yamlMediaType:
		if data, err = yaml.YAMLToJSON(data); err != nil {
			return apierror.New(apierror.ErrBadRequest, "the body of the request is not valid YAML: %v", err)
		}
	}
	return decodeStrict(c, data, obj, directive)
}

// decodeObject decodes a request body as an object of the target's kind, checking the
// apiVersion and kind it names. Strict decoding problems are reported only after the kind
// check, so a body of the wrong kind says so rather than listing its unknown fields.
func (s *Server) decodeObject(c *gin.Context, res *scheme.Resource, data []byte, directive string) (runtime.Object, error) {
	format, err := bodyFormat(c, res)
	if err != nil {
		return nil, err
	}
	obj := res.New()
	switch format {
	case protobufMediaType:
		if err := decodeProtobuf(data, obj, res.GVK); err != nil {
			return nil, err
		}
		obj.GetObjectKind().SetGroupVersionKind(res.GVK)
		return toStored(res, obj)
	case yamlMediaType:
		if data, err = yaml.YAMLToJSON(data); err != nil {
			return nil, apierror.New(apierror.ErrBadRequest, "the body of the request is not valid YAML: %v", err)
		}
	}
	return s.decodeJSONObject(c, res, data, directive)
}

// toStored converts an object decoded as res's kind to the kind it is stored as. An
// annotation that carries a field of the stored version and does not parse is invalid.
func toStored(res *scheme.Resource, obj runtime.Object) (runtime.Object, error) {
	if res.Storage == nil {
		return obj, nil
	}
	out, err := scheme.Convert(obj, res.Storage)
	if err != nil {
		var ae *scheme.AnnotationError
		if errors.As(err, &ae) {
			m, _ := meta.Accessor(obj)
			path := field.NewPath("metadata", "annotations").Key(ae.Key)
			return nil, apierror.Invalid(res.GVK.Group, res.GVK.Kind, m.GetName(), field.ErrorList{field.Invalid(path, ae.Value, ae.Err.Error())})
		}
		return nil, apierror.New(apierror.ErrBadRequest, "convert %s to %s: %v", res.GVK, res.Storage.GVK, err)
	}
	return out, nil
}

// toServed shows obj, of the kind res is stored as (an object or a list), as res's kind;
// anything else (a Status, an object already of res's kind) is left as it is.
func toServed(res *scheme.Resource, obj runtime.Object) (runtime.Object, error) {
	if res == nil || res.Storage == nil {
		return obj, nil
	}
	t := reflect.TypeOf(obj)
	if t != reflect.TypeOf(res.Storage.New()) && t != reflect.TypeOf(res.Storage.NewList()) {
		return obj, nil
	}
	out, err := scheme.Convert(obj, res)
	if err != nil {
		return nil, fmt.Errorf("convert %s to %s: %w", res.Storage.GVK, res.GVK, err)
	}
	return out, nil
}

// decodeJSONObject is decodeObject for JSON, which patches also produce.
func (s *Server) decodeJSONObject(c *gin.Context, res *scheme.Resource, data []byte, directive string) (runtime.Object, error) {
	var obj runtime.Object
	var strictErrs []error
	var err error
	if res.Custom {
		obj, strictErrs, err = decodeCustomObject(data)
	} else {
		obj = res.New()
		strictErrs, err = kjson.UnmarshalStrict(data, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	}
	if err != nil {
		return nil, apierror.New(apierror.ErrBadRequest, "the body of the request could not be decoded: %v", cleanJSONError(err))
	}
	tm, err := meta.TypeAccessor(obj)
	if err != nil {
		return nil, err
	}
	want := res.GVK
	if k := tm.GetKind(); k != "" && k != want.Kind {
		return nil, apierror.New(apierror.ErrBadRequest, "the kind in the body (%s) does not match the kind of the endpoint (%s)", k, want.Kind)
	}
	if v := tm.GetAPIVersion(); v != "" && v != want.GroupVersion().String() {
		return nil, apierror.New(apierror.ErrBadRequest, "the API version in the body (%s) does not match the API version of the endpoint (%s)", v, want.GroupVersion().String())
	}
	if res.Custom && directive != metav1.FieldValidationIgnore {
		// A custom object's unknown fields are those its schema prunes, as in Kubernetes.
		for _, path := range s.reg.PruneUnknown(res, obj) {
			strictErrs = append(strictErrs, fmt.Errorf("unknown field %q", path))
		}
	}
	if err := applyDirective(c, strictErrs, directive); err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GVK)
	return toStored(res, obj)
}

// decodeCustomObject reads a custom object in one pass, as a map: duplicate fields are strict
// errors as in typed objects, and a missing kind is refused as Kubernetes' unstructured
// decoder refuses it.
func decodeCustomObject(data []byte) (*unstructured.Unstructured, []error, error) {
	var m map[string]any
	strictErrs, err := kjson.UnmarshalStrict(data, &m, kjson.DisallowDuplicateFields)
	if err != nil {
		return nil, nil, err
	}
	if m == nil {
		return nil, nil, errors.New("the body is not a JSON object")
	}
	if k, ok := m["kind"].(string); !ok || k == "" {
		return nil, nil, runtime.NewMissingKindErr(string(data))
	}
	return &unstructured.Unstructured{Object: m}, strictErrs, nil
}

// writeError answers with the Status an error maps to.
func writeError(c *gin.Context, err error) {
	drainBody(c)
	st := apierror.ToStatus(err)
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	c.Set(statusKey, int(st.Code))
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		c.Header("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	data, _ := json.Marshal(st)
	c.Data(int(st.Code), jsonMediaType, data)
	c.Abort()
}

const statusKey = "minik8s.status"

// writeJSON answers with obj as JSON, whatever the client asked for; for answers that only
// have a JSON form (discovery, Status objects of subresources).
func writeJSON(c *gin.Context, code int, obj any) {
	data, err := json.Marshal(obj)
	if err != nil {
		writeError(c, fmt.Errorf("encode response: %w", err))
		return
	}
	c.Data(code, jsonMediaType, data)
}

// encode renders obj in a negotiated form: the object (JSON, YAML or protobuf), a Table, or
// its metadata.
func (s *Server) encode(out output, obj runtime.Object) ([]byte, error) {
	if out.view != viewTable {
		// Tables are made from the stored version, which has every column.
		var err error
		if obj, err = toServed(out.res, obj); err != nil {
			return nil, err
		}
	}
	switch out.view {
	case viewTable:
		if s.cfg.Tables == nil {
			return nil, apierror.New(apierror.ErrNotAcceptable, "tables are not served")
		}
		tbl, err := s.cfg.Tables.Convert(obj, string(out.includeObject), s.cfg.Now())
		if err != nil {
			return nil, fmt.Errorf("render table: %w", err)
		}
		tbl.APIVersion, tbl.Kind = "meta.k8s.io/v1", "Table"
		obj = tbl
	case viewMetadata:
		m, err := partialMetadata(obj)
		if err != nil {
			return nil, err
		}
		obj = m
	}
	switch out.mediaType {
	case protobufMediaType:
		var buf bytes.Buffer
		if err := protobufCodec.Encode(obj, &buf); err != nil {
			return nil, fmt.Errorf("encode protobuf: %w", err)
		}
		return buf.Bytes(), nil
	case yamlMediaType:
		return yaml.Marshal(obj)
	}
	return scheme.MarshalJSON(obj)
}

// partialMetadata reduces an object or list to PartialObjectMetadata(List).
func partialMetadata(obj runtime.Object) (runtime.Object, error) {
	metaOnly := func(o runtime.Object) (*metav1.PartialObjectMetadata, error) {
		if u, ok := o.(*unstructured.Unstructured); ok {
			var om metav1.ObjectMeta
			md, _ := u.Object["metadata"].(map[string]any)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &om); err != nil {
				return nil, err
			}
			return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: om}, nil
		}
		acc, ok := o.(metav1.ObjectMetaAccessor)
		if !ok {
			return nil, fmt.Errorf("%T has no ObjectMeta", o)
		}
		om, ok := acc.GetObjectMeta().(*metav1.ObjectMeta)
		if !ok {
			return nil, fmt.Errorf("%T has no ObjectMeta", o)
		}
		return &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: *om,
		}, nil
	}
	if !meta.IsListType(obj) {
		return metaOnly(obj)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return nil, err
	}
	list := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: lm.GetResourceVersion(), Continue: lm.GetContinue()},
	}
	for _, item := range items {
		p, err := metaOnly(item)
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, *p)
	}
	return list, nil
}

// respond writes an object or list in the negotiated form.
func (s *Server) respond(c *gin.Context, out output, code int, obj runtime.Object) {
	data, err := s.encode(out, obj)
	if err != nil {
		writeError(c, err)
		return
	}
	c.Data(code, out.mediaType, s.pretty(c, out, data))
}

// respondWritten answers with what a write left.
func (s *Server) respondWritten(c *gin.Context, out output, code int, res *scheme.Resource, w registry.Written) {
	s.respondStored(c, out, code, res, w.Object, w.Stored, w.Revision)
}

// respondStored answers with a stored object: straight from its bytes when the client takes
// plain JSON (and the bytes are in the expected shape), decoded and encoded otherwise.
func (s *Server) respondStored(c *gin.Context, out output, code int, res *scheme.Resource, obj runtime.Object, stored []byte, rev int64) {
	// A custom object read back gets its schema's defaults, and is stored in its storage
	// version: only one just written in that version is its stored bytes.
	custom := res.Custom && (obj == nil || res.StorageVersion != res.GVK.Version)
	if out.mediaType == jsonMediaType && out.view == viewObject && stored != nil && res.Storage == nil && !custom {
		if data, ok := storage.WithResourceVersion(stored, rev); ok {
			c.Data(code, jsonMediaType, s.pretty(c, out, data))
			return
		}
	}
	if obj == nil {
		var err error
		if obj, err = s.reg.Decode(res.Stored(), stored, rev); err != nil {
			writeError(c, err)
			return
		}
	}
	s.respond(c, out, code, obj)
}

// pretty indents JSON for clients that ask (pretty=true) or are curl or wget, as Kubernetes
// does.
func (s *Server) pretty(c *gin.Context, out output, data []byte) []byte {
	if out.mediaType != jsonMediaType || !wantsPretty(c) {
		return data
	}
	var buf bytes.Buffer
	if json.Indent(&buf, data, "", "  ") != nil {
		return data
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

func wantsPretty(c *gin.Context) bool {
	if v, ok := c.GetQuery("pretty"); ok {
		return queryBool(v)
	}
	ua := strings.ToLower(c.GetHeader("User-Agent"))
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "wget")
}

// queryBool reads a boolean query parameter as Kubernetes does: true unless "false" or "0".
func queryBool(v string) bool {
	return v != "0" && !strings.EqualFold(v, "false")
}
