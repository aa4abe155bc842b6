package openapi

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/scheme"
)

// Names of shared schemas the operations refer to.
const (
	statusSchema        = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	deleteOptionsSchema = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	patchSchema         = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	scaleSchema         = "io.k8s.api.autoscaling.v1.Scale"
	bindingSchema       = "io.k8s.api.core.v1.Binding"
	evictionSchema      = "io.k8s.api.policy.v1.Eviction"
	tokenRequestSchema  = "io.k8s.api.authentication.v1.TokenRequest"
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

// param is a path or query parameter, before it becomes one of either version.
type param struct {
	name, in, typ, description string
	required                   bool
}

func queryParam(name, typ, description string) param {
	return param{name: name, in: "query", typ: typ, description: description}
}

func pathParam(name, description string) param {
	return param{name: name, in: "path", typ: "string", description: description, required: true}
}

// Query parameters by the verbs that take them. fieldValidation sits on every write
// operation itself (not on the path) because kubectl only looks there.
var (
	writeParams = []param{
		queryParam("dryRun", "string", "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed"),
		queryParam("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes."),
		queryParam("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict (the default)."),
	}
	patchParams = append(append([]param{}, writeParams...),
		queryParam("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people."))
	listParams = []param{
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
	deleteParams = []param{
		queryParam("dryRun", "string", "When present, indicates that modifications should not be persisted."),
		queryParam("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted."),
		queryParam("propagationPolicy", "string", "Whether and how garbage collection will be performed: Orphan, Background or Foreground."),
	}
	logParams = []param{
		queryParam("container", "string", "The container for which to stream logs. Defaults to only container if there is one container in the pod."),
		queryParam("follow", "boolean", "Follow the log stream of the pod."),
		queryParam("previous", "boolean", "Return previous terminated container logs."),
		queryParam("sinceSeconds", "integer", "A relative time in seconds before the current time from which to show logs."),
		queryParam("tailLines", "integer", "If set, the number of lines from the end of the logs to show."),
		queryParam("timestamps", "boolean", "If true, add an RFC3339 timestamp at the beginning of every line of log output."),
	}
	// The options of the streaming pod subresources, which Kubernetes lists as "connect"
	// operations.
	attachParams = []param{
		queryParam("container", "string", "The container in which to execute the command. Defaults to only container if there is only one container in the pod."),
		queryParam("stderr", "boolean", "Redirect the standard error stream of the pod for this call."),
		queryParam("stdin", "boolean", "Redirect the standard input stream of the pod for this call. Defaults to false."),
		queryParam("stdout", "boolean", "Redirect the standard output stream of the pod for this call."),
		queryParam("tty", "boolean", "TTY if true indicates that a tty will be allocated for the exec call. Defaults to false."),
	}
	execParams = append([]param{
		queryParam("command", "string", "Command is the remote command to execute. argv array. Not executed within a shell."),
	}, attachParams...)
	portForwardParams = []param{
		queryParam("ports", "integer", "List of ports to forward Required when using WebSockets"),
	}
	prettyParam = queryParam("pretty", "string", "If 'true', then the output is pretty printed.")
)

// op describes one operation before it becomes one of either version.
type op struct {
	id          string
	action      string // x-kubernetes-action
	gvk         schema.GroupVersionKind
	description string
	params      []param
	body        string   // schema name of the request body, if any
	bodyTypes   []string // content types of the body; "*/*" when empty
	responses   map[int]string
	rawOutput   string // media type of a response that is no object: text/plain for logs, */* for streams
}

// consumes is what the body may be sent as.
func (o *op) consumes() []string {
	if len(o.bodyTypes) == 0 {
		return []string{"*/*"}
	}
	return o.bodyTypes
}

// bodyRequired: a delete may come without DeleteOptions, from kubectl among others.
func (o *op) bodyRequired() bool {
	return o.action != "delete" && o.action != "deletecollection"
}

// route is what one path serves: its parameters and an operation per method.
type route struct {
	tag                           string
	params                        []param
	get, put, post, patch, delete *op
}

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

// resourceRoutes lists the Kubernetes paths of one resource. kind and list are the schema
// names of the object and its list.
func resourceRoutes(prefix string, r *scheme.Resource, kind, list string) map[string]*route {
	routes := map[string]*route{}
	gvk := r.GVK
	gp := groupPrefix(gvk.GroupVersion())
	tag := strings.ToLower(strings.TrimSuffix(gp, strings.ToUpper(gvk.Version[:1])+gvk.Version[1:])) + "_" + gvk.Version
	ns := ""
	collection := prefix + "/" + r.Plural
	pathParams := []param{prettyParam}
	if r.Namespaced {
		ns = "Namespaced"
		collection = prefix + "/namespaces/{namespace}/" + r.Plural
		pathParams = []param{pathParam("namespace", "object name and auth scope, such as for teams and projects"), prettyParam}
	}
	item := collection + "/{name}"
	itemParams := append([]param{pathParam("name", "name of the "+gvk.Kind)}, pathParams...)
	ok := map[int]string{200: kind}

	c := &route{tag: tag, params: pathParams}
	c.get = &op{id: "list" + gp + ns + gvk.Kind, action: "list", gvk: gvk, params: listParams,
		description: "list or watch objects of kind " + gvk.Kind, responses: map[int]string{200: list}}
	c.post = &op{id: "create" + gp + ns + gvk.Kind, action: "post", gvk: gvk, params: writeParams, body: kind,
		description: "create a " + gvk.Kind, responses: map[int]string{200: kind, 201: kind, 202: kind}}
	if r.DeleteCollection {
		c.delete = &op{id: "delete" + gp + "Collection" + ns + gvk.Kind, action: "deletecollection", gvk: gvk,
			params: append(append([]param{}, deleteParams...), listParams...), body: deleteOptionsSchema,
			description: "delete collection of " + gvk.Kind, responses: map[int]string{200: statusSchema}}
	}
	routes[collection] = c

	i := &route{tag: tag, params: itemParams}
	i.get = &op{id: "read" + gp + ns + gvk.Kind, action: "get", gvk: gvk,
		description: "read the specified " + gvk.Kind, responses: ok}
	i.put = &op{id: "replace" + gp + ns + gvk.Kind, action: "put", gvk: gvk, params: writeParams, body: kind,
		description: "replace the specified " + gvk.Kind, responses: map[int]string{200: kind, 201: kind}}
	i.patch = &op{id: "patch" + gp + ns + gvk.Kind, action: "patch", gvk: gvk, params: patchParams, body: patchSchema,
		bodyTypes: patchContentTypes(r), description: "partially update the specified " + gvk.Kind,
		responses: map[int]string{200: kind, 201: kind}}
	i.delete = &op{id: "delete" + gp + ns + gvk.Kind, action: "delete", gvk: gvk, params: deleteParams, body: deleteOptionsSchema,
		description: "delete a " + gvk.Kind, responses: map[int]string{200: kind, 202: kind}}
	routes[item] = i

	if r.Namespaced {
		all := &route{tag: tag, params: []param{prettyParam}}
		all.get = &op{id: "list" + gp + gvk.Kind + "ForAllNamespaces", action: "list", gvk: gvk, params: listParams,
			description: "list or watch objects of kind " + gvk.Kind, responses: map[int]string{200: list}}
		routes[prefix+"/"+r.Plural] = all
	}

	for _, sub := range r.Subresources {
		p := &route{tag: tag, params: itemParams}
		suffix := strings.ToUpper(sub[:1]) + sub[1:]
		base := gp + ns + gvk.Kind + suffix
		switch sub {
		case "status", "scale", "ephemeralcontainers":
			subGVK, body := gvk, kind
			if sub == "scale" {
				subGVK, body = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, scaleSchema
			}
			p.get = &op{id: "read" + base, action: "get", gvk: subGVK,
				description: "read " + sub + " of the specified " + gvk.Kind, responses: map[int]string{200: body}}
			p.put = &op{id: "replace" + base, action: "put", gvk: subGVK, params: writeParams, body: body,
				description: "replace " + sub + " of the specified " + gvk.Kind, responses: map[int]string{200: body, 201: body}}
			p.patch = &op{id: "patch" + base, action: "patch", gvk: subGVK, params: patchParams, body: patchSchema,
				bodyTypes: patchContentTypes(r), description: "partially update " + sub + " of the specified " + gvk.Kind,
				responses: map[int]string{200: body, 201: body}}
		case "binding":
			bgvk := schema.GroupVersionKind{Version: "v1", Kind: "Binding"}
			p.post = &op{id: "create" + base, action: "post", gvk: bgvk, params: writeParams, body: bindingSchema,
				description: "create binding of a " + gvk.Kind, responses: map[int]string{200: bindingSchema, 201: bindingSchema, 202: bindingSchema}}
		case "log":
			p.params = append(append([]param{}, itemParams...), logParams...)
			p.get = &op{id: "read" + base, action: "get", gvk: gvk, rawOutput: "text/plain",
				description: "read log of the specified " + gvk.Kind, responses: map[int]string{200: ""}}
		case "eviction":
			egvk := schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
			p.post = &op{id: "create" + base, action: "post", gvk: egvk, params: writeParams, body: evictionSchema,
				description: "create eviction of a " + gvk.Kind, responses: map[int]string{200: evictionSchema, 201: evictionSchema, 202: evictionSchema}}
		case "token":
			tgvk := schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}
			p.post = &op{id: "create" + base, action: "post", gvk: tgvk, params: writeParams, body: tokenRequestSchema,
				description: "create token of a " + gvk.Kind, responses: map[int]string{200: tokenRequestSchema, 201: tokenRequestSchema, 202: tokenRequestSchema}}
		case "exec", "attach", "portforward":
			options, params := "PodExecOptions", execParams
			switch sub {
			case "attach":
				options, params = "PodAttachOptions", attachParams
			case "portforward":
				options, params = "PodPortForwardOptions", portForwardParams
			}
			p.params = append(append([]param{}, itemParams...), params...)
			ogvk := schema.GroupVersionKind{Version: "v1", Kind: options}
			p.get = &op{id: "connect" + gp + "Get" + ns + gvk.Kind + suffix, action: "connect", gvk: ogvk, rawOutput: "*/*",
				description: "connect GET requests to " + sub + " of " + gvk.Kind, responses: map[int]string{200: ""}}
			p.post = &op{id: "connect" + gp + "Post" + ns + gvk.Kind + suffix, action: "connect", gvk: ogvk, rawOutput: "*/*",
				description: "connect POST requests to " + sub + " of " + gvk.Kind, responses: map[int]string{200: ""}}
		case "proxy":
			// Any method, to the pod, service or node; upstream publishes the five below on
			// .../proxy (with the target path as a query parameter) and on .../proxy/{path}.
			ogvk := schema.GroupVersionKind{Version: "v1", Kind: gvk.Kind + "ProxyOptions"}
			withPath := &route{tag: tag, params: append([]param{pathParam("path", "path to the resource")}, itemParams...)}
			p.params = append(append([]param{}, itemParams...), queryParam("path", "string", "Path is the URL path to use for the current proxy request to "+strings.ToLower(gvk.Kind)+"."))
			for _, rt := range []struct {
				r     *route
				extra string
			}{{p, ""}, {withPath, "WithPath"}} {
				for _, m := range []struct {
					name string
					into **op
				}{{"Get", &rt.r.get}, {"Put", &rt.r.put}, {"Post", &rt.r.post}, {"Patch", &rt.r.patch}, {"Delete", &rt.r.delete}} {
					*m.into = &op{id: "connect" + gp + m.name + ns + gvk.Kind + suffix + rt.extra, action: "connect", gvk: ogvk, rawOutput: "*/*",
						description: "connect " + strings.ToUpper(m.name) + " requests to proxy of " + gvk.Kind, responses: map[int]string{200: ""}}
				}
			}
			routes[item+"/proxy/{path}"] = withPath
		case "invoke":
			// The body and the answer are the function's or workflow's own JSON, which no
			// schema describes; the gateway's errors come back as they are.
			p.post = &op{id: "connect" + gp + "Post" + ns + gvk.Kind + suffix, action: "connect", gvk: gvk, rawOutput: "application/json",
				description: "invoke the specified " + gvk.Kind + " through the serverless gateway", responses: map[int]string{200: ""}}
		default:
			continue
		}
		routes[item+"/"+sub] = p
	}
	return routes
}
