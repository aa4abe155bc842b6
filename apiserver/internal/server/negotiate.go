package server

import (
	"mime"
	"strings"

	"github.com/gin-gonic/gin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// res is the resource as the request names it, whose version objects are shown in.
	res *scheme.Resource
	// includeObject says what a Table's rows carry.
	includeObject metav1.IncludeObjectPolicy
}

// answer is what a request answers with: one object, a list, or a stream of watch events.
type answer int

const (
	answerObject answer = iota
	answerList
	answerWatch
)

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

// negotiate picks the form of the answer before anything is done, so a request whose answer
// the client cannot take changes nothing. It writes the error itself and reports false.
func (s *Server) negotiate(c *gin.Context, res *scheme.Resource, a answer) (output, bool) {
	out, err := negotiateOutput(c, res, a)
	if err != nil {
		writeError(c, err)
		return output{}, false
	}
	out.res = res
	return out, true
}

// negotiateOutput picks the first acceptable entry of the Accept header, in the client's
// order, as Kubernetes does: JSON, YAML (not for watches: it has no stream form), protobuf
// (for kinds that have a protobuf form), and JSON Tables or PartialObjectMetadata(List) for
// clients that ask for those views.
func negotiateOutput(c *gin.Context, res *scheme.Resource, a answer) (output, error) {
	out, err := acceptable(c.GetHeader("Accept"), res, a)
	if err != nil || out.view != viewTable {
		return out, err
	}
	switch inc := metav1.IncludeObjectPolicy(c.Query("includeObject")); inc {
	case "":
		out.includeObject = metav1.IncludeMetadata
	case metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
		out.includeObject = inc
	default:
		return output{}, apierror.New(apierror.ErrBadRequest, "includeObject must be one of None, Metadata or Object, not %q", inc)
	}
	return out, nil
}

func acceptable(accept string, res *scheme.Resource, a answer) (output, error) {
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
			case "PartialObjectMetadata":
				if a == answerList {
					continue
				}
				v = viewMetadata
			case "PartialObjectMetadataList":
				if a != answerList {
					continue
				}
				v = viewMetadata
			default:
				continue
			}
		}
		switch mt {
		case jsonMediaType, "application/*", "*/*":
			return output{mediaType: jsonMediaType, view: v}, nil
		case yamlMediaType:
			if v == viewObject && a != answerWatch {
				return output{mediaType: yamlMediaType}, nil
			}
		case protobufMediaType:
			if v == viewObject && (res == nil || protobufCapable(res)) {
				return output{mediaType: protobufMediaType}, nil
			}
		}
	}
	accepted := acceptedMediaTypes(res)
	if a == answerWatch {
		accepted = strings.Replace(accepted, yamlMediaType+", ", "", 1)
	}
	return output{}, apierror.New(apierror.ErrNotAcceptable, "only the following media types are accepted: %s", accepted)
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
