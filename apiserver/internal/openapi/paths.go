package openapi

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"minik8s.io/shared/scheme"
)

// Names of shared schemas the operations refer to.
const (
	statusSchema        = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	deleteOptionsSchema = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	patchSchema         = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	scaleSchema         = "io.k8s.api.autoscaling.v1.Scale"
	bindingSchema       = "io.k8s.api.core.v1.Binding"
)

// PatchContentTypes are the patch formats PATCH accepts.
var PatchContentTypes = []string{
	"application/apply-patch+yaml",
	"application/json-patch+json",
	"application/merge-patch+json",
	"application/strategic-merge-patch+json",
}

// patchContentTypes are the patch formats a resource accepts: without strategic merge where it
// does not apply, so the real kubectl computes a JSON merge patch for those kinds.
func patchContentTypes(r *scheme.Resource) []string {
	if r.StrategicMerge() {
		return PatchContentTypes
	}
	var out []string
	for _, ct := range PatchContentTypes {
		if ct != "application/strategic-merge-patch+json" {
			out = append(out, ct)
		}
	}
	return out
}

var responseContentTypes = []string{"application/json", "application/yaml"}

func queryParam(name, typ, description string) *spec3.Parameter {
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{
		Name: name, In: "query", Description: description,
		Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{typ}}},
	}}
}

func pathParam(name, description string) *spec3.Parameter {
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{
		Name: name, In: "path", Required: true, Description: description,
		Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
	}}
}

// Query parameters by the verbs that take them. fieldValidation sits on every write
// operation itself (not on the path) because kubectl only looks there.
var (
	writeParams = []*spec3.Parameter{
		queryParam("dryRun", "string", "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed"),
		queryParam("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes."),
		queryParam("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict (the default)."),
	}
	patchParams = append(append([]*spec3.Parameter{}, writeParams...),
		queryParam("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people."))
	listParams = []*spec3.Parameter{
		queryParam("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."),
		queryParam("continue", "string", "The continue option should be set when retrieving more results from the server."),
		queryParam("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
		queryParam("labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
		queryParam("limit", "integer", "limit is a maximum number of responses to return for a list call."),
		queryParam("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from."),
		queryParam("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls."),
		queryParam("timeoutSeconds", "integer", "Timeout for the list/watch call."),
		queryParam("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."),
	}
	deleteParams = []*spec3.Parameter{
		queryParam("dryRun", "string", "When present, indicates that modifications should not be persisted."),
		queryParam("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted."),
		queryParam("propagationPolicy", "string", "Whether and how garbage collection will be performed: Orphan, Background or Foreground."),
	}
	logParams = []*spec3.Parameter{
		queryParam("container", "string", "The container for which to stream logs. Defaults to only container if there is one container in the pod."),
		queryParam("follow", "boolean", "Follow the log stream of the pod."),
		queryParam("previous", "boolean", "Return previous terminated container logs."),
		queryParam("sinceSeconds", "integer", "A relative time in seconds before the current time from which to show logs."),
		queryParam("tailLines", "integer", "If set, the number of lines from the end of the logs to show."),
		queryParam("timestamps", "boolean", "If true, add an RFC3339 timestamp at the beginning of every line of log output."),
	}
	prettyParam = queryParam("pretty", "string", "If 'true', then the output is pretty printed.")
)

// op describes one operation before it becomes a spec3.Operation.
type op struct {
	id          string
	action      string // x-kubernetes-action
	gvk         schema.GroupVersionKind
	description string
	params      []*spec3.Parameter
	body        string   // schema name of the request body, if any
	bodyTypes   []string // content types of the body; "*/*" when empty
	responses   map[int]string
	textOutput  bool // the response is plain text (logs)
}

func (o op) build(tag string) *spec3.Operation {
	out := &spec3.Operation{OperationProps: spec3.OperationProps{
		Tags: []string{tag}, Description: o.description, OperationId: o.id,
		Parameters: o.params,
		Responses:  &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{}}},
	}}
	out.AddExtension("x-kubernetes-action", o.action)
	out.AddExtension(extGVK, map[string]any{"group": o.gvk.Group, "version": o.gvk.Version, "kind": o.gvk.Kind})
	if o.body != "" {
		types := o.bodyTypes
		if len(types) == 0 {
			types = []string{"*/*"}
		}
		content := map[string]*spec3.MediaType{}
		for _, ct := range types {
			ref := refTo(o.body)
			content[ct] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &ref}}
		}
		out.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{Content: content, Required: o.action != "delete"}}
	}
	for code, name := range o.responses {
		content := map[string]*spec3.MediaType{}
		if o.textOutput {
			content["text/plain"] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}}}
		} else {
			for _, ct := range responseContentTypes {
				ref := refTo(name)
				content[ct] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &ref}}
			}
		}
		out.Responses.StatusCodeResponses[code] = &spec3.Response{ResponseProps: spec3.ResponseProps{Description: statusText[code], Content: content}}
	}
	out.Responses.StatusCodeResponses[401] = &spec3.Response{ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}
	return out
}

var statusText = map[int]string{200: "OK", 201: "Created", 202: "Accepted"}

// groupPrefix is the operation id prefix of a group version: "CoreV1", "AppsV1",
// "NetworkingV1", "ServerlessMinik8sIoV1".
func groupPrefix(gv schema.GroupVersion) string {
	g := gv.Group
	if g == "" {
		g = "core"
	}
	g = strings.TrimSuffix(g, ".k8s.io")
	var b strings.Builder
	for _, part := range strings.FieldsFunc(g, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + strings.ToUpper(gv.Version[:1]) + gv.Version[1:]
}

// resourcePaths adds the Kubernetes paths of one resource to paths. kind and list are the
// component names of the object and list schemas.
func resourcePaths(paths map[string]*spec3.Path, prefix string, r *scheme.Resource, kind, list string) {
	gvk := r.GVK
	gp := groupPrefix(gvk.GroupVersion())
	tag := strings.ToLower(strings.TrimSuffix(gp, strings.ToUpper(gvk.Version[:1])+gvk.Version[1:])) + "_" + gvk.Version
	ns := ""
	collection := prefix + "/" + r.Plural
	pathParams := []*spec3.Parameter{prettyParam}
	if r.Namespaced {
		ns = "Namespaced"
		collection = prefix + "/namespaces/{namespace}/" + r.Plural
		pathParams = []*spec3.Parameter{pathParam("namespace", "object name and auth scope, such as for teams and projects"), prettyParam}
	}
	item := collection + "/{name}"
	itemParams := append([]*spec3.Parameter{pathParam("name", "name of the "+gvk.Kind)}, pathParams...)
	ok := map[int]string{200: kind}

	c := &spec3.Path{PathProps: spec3.PathProps{Parameters: pathParams}}
	c.Get = op{id: "list" + gp + ns + gvk.Kind, action: "list", gvk: gvk, params: listParams,
		description: "list or watch objects of kind " + gvk.Kind, responses: map[int]string{200: list}}.build(tag)
	c.Post = op{id: "create" + gp + ns + gvk.Kind, action: "post", gvk: gvk, params: writeParams, body: kind,
		description: "create a " + gvk.Kind, responses: map[int]string{200: kind, 201: kind, 202: kind}}.build(tag)
	if r.DeleteCollection {
		c.Delete = op{id: "delete" + gp + "Collection" + ns + gvk.Kind, action: "deletecollection", gvk: gvk,
			params: append(append([]*spec3.Parameter{}, deleteParams...), listParams...), body: deleteOptionsSchema,
			description: "delete collection of " + gvk.Kind, responses: map[int]string{200: statusSchema}}.build(tag)
	}
	paths[collection] = c

	i := &spec3.Path{PathProps: spec3.PathProps{Parameters: itemParams}}
	i.Get = op{id: "read" + gp + ns + gvk.Kind, action: "get", gvk: gvk,
		description: "read the specified " + gvk.Kind, responses: ok}.build(tag)
	i.Put = op{id: "replace" + gp + ns + gvk.Kind, action: "put", gvk: gvk, params: writeParams, body: kind,
		description: "replace the specified " + gvk.Kind, responses: map[int]string{200: kind, 201: kind}}.build(tag)
	i.Patch = op{id: "patch" + gp + ns + gvk.Kind, action: "patch", gvk: gvk, params: patchParams, body: patchSchema,
		bodyTypes: patchContentTypes(r), description: "partially update the specified " + gvk.Kind,
		responses: map[int]string{200: kind, 201: kind}}.build(tag)
	i.Delete = op{id: "delete" + gp + ns + gvk.Kind, action: "delete", gvk: gvk, params: deleteParams, body: deleteOptionsSchema,
		description: "delete a " + gvk.Kind, responses: map[int]string{200: kind, 202: kind}}.build(tag)
	paths[item] = i

	if r.Namespaced {
		all := &spec3.Path{PathProps: spec3.PathProps{Parameters: []*spec3.Parameter{prettyParam}}}
		all.Get = op{id: "list" + gp + gvk.Kind + "ForAllNamespaces", action: "list", gvk: gvk, params: listParams,
			description: "list or watch objects of kind " + gvk.Kind, responses: map[int]string{200: list}}.build(tag)
		paths[prefix+"/"+r.Plural] = all
	}

	for _, sub := range r.Subresources {
		p := &spec3.Path{PathProps: spec3.PathProps{Parameters: itemParams}}
		suffix := strings.ToUpper(sub[:1]) + sub[1:]
		base := gp + ns + gvk.Kind + suffix
		switch sub {
		case "status", "scale":
			subGVK, body := gvk, kind
			if sub == "scale" {
				subGVK, body = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, scaleSchema
			}
			p.Get = op{id: "read" + base, action: "get", gvk: subGVK,
				description: "read " + sub + " of the specified " + gvk.Kind, responses: map[int]string{200: body}}.build(tag)
			p.Put = op{id: "replace" + base, action: "put", gvk: subGVK, params: writeParams, body: body,
				description: "replace " + sub + " of the specified " + gvk.Kind, responses: map[int]string{200: body, 201: body}}.build(tag)
			p.Patch = op{id: "patch" + base, action: "patch", gvk: subGVK, params: patchParams, body: patchSchema,
				bodyTypes: patchContentTypes(r), description: "partially update " + sub + " of the specified " + gvk.Kind,
				responses: map[int]string{200: body, 201: body}}.build(tag)
		case "binding":
			bgvk := schema.GroupVersionKind{Version: "v1", Kind: "Binding"}
			p.Post = op{id: "create" + base, action: "post", gvk: bgvk, params: writeParams, body: bindingSchema,
				description: "create binding of a " + gvk.Kind, responses: map[int]string{200: bindingSchema, 201: bindingSchema, 202: bindingSchema}}.build(tag)
		case "log":
			p.Parameters = append(append([]*spec3.Parameter{}, itemParams...), logParams...)
			p.Get = op{id: "read" + base, action: "get", gvk: gvk, textOutput: true,
				description: "read log of the specified " + gvk.Kind, responses: map[int]string{200: ""}}.build(tag)
		default:
			continue
		}
		paths[item+"/"+sub] = p
	}
}
