package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// MaxBodyBytes is the largest request body accepted, as in Kubernetes.
const MaxBodyBytes = 3 << 20

// readBody reads at most MaxBodyBytes and turns YAML into JSON.
func readBody(c *gin.Context) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(c.Request.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, apierror.New(apierror.ErrBadRequest, "reading request body: %v", err)
	}
	if len(data) > MaxBodyBytes {
		return nil, apierror.New(apierror.ErrRequestTooLarge, "the request body is larger than %d bytes", MaxBodyBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, apierror.New(apierror.ErrBadRequest, "the request body is empty")
	}
	mt := mediaType(c.GetHeader("Content-Type"))
	switch mt {
	case "", "application/json", "*/*":
		return data, nil
	case protobufMediaType:
		return protobufToJSON(data)
	case "application/yaml", "application/x-yaml", "text/yaml":
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, apierror.New(apierror.ErrBadRequest, "the body of the request is not valid YAML: %v", err)
		}
		return j, nil
	default:
		return nil, apierror.New(apierror.ErrUnsupportedMediaType, "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf")
	}
}

func mediaType(h string) string {
	if h == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(h)
	if err != nil {
		return h
	}
	return mt
}

// fieldValidation returns the directive of the request: Strict, Warn (the default) or Ignore.
func fieldValidation(c *gin.Context) (string, error) {
	switch v := c.Query("fieldValidation"); v {
	case "":
		return metav1.FieldValidationWarn, nil
	case metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore:
		return v, nil
	default:
		return "", apierror.New(apierror.ErrBadRequest, "fieldValidation must be one of Strict, Warn or Ignore, not %q", v)
	}
}

// decodeInto decodes JSON into obj, case-sensitively, reporting unknown and duplicate fields
// according to the directive: an error under Strict, warnings under Warn.
func decodeInto(c *gin.Context, data []byte, obj any, directive string) error {
	strictErrs, err := kjson.UnmarshalStrict(data, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return apierror.New(apierror.ErrBadRequest, "the body of the request could not be decoded: %v", cleanJSONError(err))
	}
	return strictResult(c, strictErrs, directive)
}

// strictResult applies the field validation directive to the strict decoding errors found.
func strictResult(c *gin.Context, strictErrs []error, directive string) error {
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

// decodeObject decodes a request body as an object of the target's kind, checking the
// apiVersion and kind it names. The body is parsed once: the kind check reads the decoded
// type meta, and strict decoding problems are reported only after it.
func decodeObject(c *gin.Context, res *scheme.Resource, data []byte, directive string) (runtime.Object, error) {
	obj := res.New()
	strictErrs, err := kjson.UnmarshalStrict(data, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, apierror.New(apierror.ErrBadRequest, "the body of the request could not be decoded: %v", cleanJSONError(err))
	}
	want := res.GVK
	tm, err := meta.TypeAccessor(obj)
	if err != nil {
		return nil, err
	}
	if k := tm.GetKind(); k != "" && k != want.Kind {
		return nil, apierror.New(apierror.ErrBadRequest, "the kind in the body (%s) does not match the kind of the endpoint (%s)", k, want.Kind)
	}
	if v := tm.GetAPIVersion(); v != "" && v != want.GroupVersion().String() {
		return nil, apierror.New(apierror.ErrBadRequest, "the API version in the body (%s) does not match the API version of the endpoint (%s)", v, want.GroupVersion().String())
	}
	if err := strictResult(c, strictErrs, directive); err != nil {
		return nil, err
	}
	setTypeMeta(obj, res)
	normalize(obj)
	return obj, nil
}

// decodeNamed decodes a body for the object a URL names: its metadata.name must be name, or
// the request fails with mismatch (by default, that the names differ).
func decodeNamed(c *gin.Context, res *scheme.Resource, data []byte, directive, name, mismatch string) (runtime.Object, metav1.Object, error) {
	obj, err := decodeObject(c, res, data, directive)
	if err != nil {
		return nil, nil, err
	}
	m, err := metaOf(obj)
	if err != nil {
		return nil, nil, err
	}
	if m.GetName() != name {
		if mismatch == "" {
			mismatch = fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name)
		}
		return nil, nil, apierror.New(apierror.ErrBadRequest, "%s", mismatch)
	}
	return obj, m, nil
}

func setTypeMeta(obj runtime.Object, res *scheme.Resource) {
	obj.GetObjectKind().SetGroupVersionKind(res.GVK)
}

// tableRequest reports whether the client asked for a meta.k8s.io Table, as kubectl get does.
func tableRequest(c *gin.Context) bool {
	for _, part := range strings.Split(c.GetHeader("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != "application/json" {
			continue
		}
		if params["as"] == "Table" && params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
			return true
		}
	}
	return false
}

// writeJSON answers with obj as JSON.
func writeJSON(c *gin.Context, code int, obj any) {
	data, err := json.Marshal(obj)
	if err != nil {
		writeError(c, fmt.Errorf("encode response: %w", err))
		return
	}
	c.Data(code, "application/json", data)
}

// writeError answers with the Status an error maps to.
func writeError(c *gin.Context, err error) {
	st := apierror.ToStatus(err)
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	c.Set(statusKey, int(st.Code))
	data, _ := json.Marshal(st)
	c.Data(int(st.Code), "application/json", data)
	c.Abort()
}

const statusKey = "minik8s.status"

// encodeStored encodes an object for etcd: JSON with type meta, without resourceVersion.
func encodeStored(obj runtime.Object, res *scheme.Resource) ([]byte, error) {
	setTypeMeta(obj, res)
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	data, err := json.Marshal(obj)
	m.SetResourceVersion(rv)
	return data, err
}

// decodeStored decodes a stored value and stamps the revision it was read at.
func decodeStored(res *scheme.Resource, data []byte, rev int64) (runtime.Object, error) {
	obj := res.New()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", res.Plural, err)
	}
	setTypeMeta(obj, res)
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(fmt.Sprint(rev))
	return obj, nil
}

const protobufMediaType = "application/vnd.kubernetes.protobuf"

// protobufCodec reads the Kubernetes protobuf envelope the real kubectl sends for some writes
// (e.g. "kubectl create namespace"); only k8s.io/api kinds have a protobuf form.
var protobufCodec = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// protobufToJSON decodes a protobuf body and re-encodes it as JSON, so the rest of the write
// path (strict decoding, validation) is the same for every wire format.
func protobufToJSON(data []byte) ([]byte, error) {
	obj, _, err := protobufCodec.Decode(data, nil, nil)
	if err != nil {
		return nil, apierror.New(apierror.ErrBadRequest, "the protobuf body could not be decoded: %v", err)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, apierror.New(apierror.ErrBadRequest, "the protobuf body could not be re-encoded: %v", err)
	}
	return out, nil
}

// respondStored answers with a stored object: straight from its bytes unless the client asked
// for a Table (or the bytes are not in the expected shape).
func (s *Server) respondStored(c *gin.Context, code int, res *scheme.Resource, obj runtime.Object, stored []byte, rev int64) {
	if !tableRequest(c) {
		if data, ok := storage.WithResourceVersion(stored, rev); ok {
			c.Data(code, "application/json", data)
			return
		}
	}
	if obj == nil {
		var err error
		if obj, err = decodeStored(res, stored, rev); err != nil {
			writeError(c, err)
			return
		}
	}
	s.respond(c, code, obj)
}
