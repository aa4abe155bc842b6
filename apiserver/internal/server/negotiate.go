package server

import (
	"mime"
	"strings"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// Media types the server reads and writes.
const (
	jsonMediaType     = "application/json"
	yamlMediaType     = "application/yaml"
	protobufMediaType = "application/vnd.kubernetes.protobuf"
)

// view is what a response shows of an object: the object itself, a meta.k8s.io Table, or only
// its metadata (PartialObjectMetadata).
type view int

const (
	viewObject view = iota
	viewTable
	viewMetadata
)

// output is the negotiated form of a response.
type output struct {
	mediaType string
	view      view
}

// protobufCapable reports whether a resource's kind has a protobuf form: the k8s.io/api kinds
// do, the serverless group's (like Kubernetes' custom resources) do not.
func protobufCapable(res *scheme.Resource) bool {
	_, ok := res.New().(runtime.ProtobufMarshaller)
	return ok
}

// acceptedMediaTypes is what a 406 or 415 lists for a resource.
func acceptedMediaTypes(res *scheme.Resource) string {
	types := []string{jsonMediaType, yamlMediaType}
	if res == nil || protobufCapable(res) {
		types = append(types, protobufMediaType)
	}
	return strings.Join(types, ", ")
}

// negotiateOutput picks the first acceptable entry of the Accept header, in the client's
// order, as Kubernetes does: JSON, YAML, protobuf (for kinds that have a protobuf form), and
// JSON Tables or PartialObjectMetadata for clients that ask for those views.
func negotiateOutput(c *gin.Context, res *scheme.Resource) (output, error) {
	accept := c.GetHeader("Accept")
	if strings.TrimSpace(accept) == "" {
		return output{mediaType: jsonMediaType}, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" {
			continue
		}
		v := viewObject
		if as := params["as"]; as != "" {
			if params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
				continue
			}
			switch as {
			case "Table":
				v = viewTable
			case "PartialObjectMetadata", "PartialObjectMetadataList":
				v = viewMetadata
			default:
				continue
			}
		}
		switch mt {
		case jsonMediaType, "application/*", "*/*":
			return output{mediaType: jsonMediaType, view: v}, nil
		case yamlMediaType:
			if v == viewObject {
				return output{mediaType: yamlMediaType}, nil
			}
		case protobufMediaType:
			if v == viewObject && (res == nil || protobufCapable(res)) {
				return output{mediaType: protobufMediaType}, nil
			}
		}
	}
	return output{}, apierror.New(apierror.ErrNotAcceptable, "only the following media types are accepted: %s", acceptedMediaTypes(res))
}

// bodyFormat is the media type of a request body, checked against what the resource reads.
func bodyFormat(c *gin.Context, res *scheme.Resource) (string, error) {
	switch mt := mediaType(c.GetHeader("Content-Type")); mt {
	case "", jsonMediaType, "*/*":
		return jsonMediaType, nil
	case yamlMediaType, "application/x-yaml", "text/yaml":
		return yamlMediaType, nil
	case protobufMediaType:
		if res == nil || protobufCapable(res) {
			return protobufMediaType, nil
		}
	}
	return "", apierror.New(apierror.ErrUnsupportedMediaType, "the body of the request was in an unknown format - accepted media types include: %s", acceptedMediaTypes(res))
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
