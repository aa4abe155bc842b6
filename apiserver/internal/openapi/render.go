package openapi

import (
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The routes of paths.go written out as either version's path items.

var statusText = map[int]string{200: "OK", 201: "Created", 202: "Accepted"}

func gvkExtension(o *op) map[string]any {
	return map[string]any{"group": o.gvk.Group, "version": o.gvk.Version, "kind": o.gvk.Kind}
}

func (p param) v3() *spec3.Parameter {
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{
		Name: p.name, In: p.in, Required: p.required, Description: p.description,
		Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{p.typ}}},
	}}
}

func v3Params(ps []param) []*spec3.Parameter {
	if len(ps) == 0 {
		return nil
	}
	out := make([]*spec3.Parameter, len(ps))
	for i, p := range ps {
		out[i] = p.v3()
	}
	return out
}

func (o *op) v3(tag string) *spec3.Operation {
	if o == nil {
		return nil
	}
	out := &spec3.Operation{OperationProps: spec3.OperationProps{
		Tags: []string{tag}, Description: o.description, OperationId: o.id,
		Parameters: v3Params(o.params),
		Responses:  &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{}}},
	}}
	out.AddExtension("x-kubernetes-action", o.action)
	out.AddExtension(extGVK, gvkExtension(o))
	if o.body != "" {
		content := map[string]*spec3.MediaType{}
		for _, ct := range o.consumes() {
			ref := v3Dialect.ref(o.body)
			content[ct] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &ref}}
		}
		out.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{Content: content, Required: o.bodyRequired()}}
	}
	for code, name := range o.responses {
		content := map[string]*spec3.MediaType{}
		if o.rawOutput != "" {
			content[o.rawOutput] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}}}
		} else {
			for _, ct := range responseContentTypes {
				ref := v3Dialect.ref(name)
				content[ct] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &ref}}
			}
		}
		out.Responses.StatusCodeResponses[code] = &spec3.Response{ResponseProps: spec3.ResponseProps{Description: statusText[code], Content: content}}
	}
	out.Responses.StatusCodeResponses[401] = &spec3.Response{ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}
	return out
}

func (rt *route) v3() *spec3.Path {
	return &spec3.Path{PathProps: spec3.PathProps{
		Parameters: v3Params(rt.params),
		Get:        rt.get.v3(rt.tag), Put: rt.put.v3(rt.tag), Post: rt.post.v3(rt.tag),
		Patch: rt.patch.v3(rt.tag), Delete: rt.delete.v3(rt.tag),
	}}
}

func (p param) v2() spec.Parameter {
	return spec.Parameter{
		ParamProps:   spec.ParamProps{Name: p.name, In: p.in, Required: p.required, Description: p.description},
		SimpleSchema: spec.SimpleSchema{Type: p.typ},
	}
}

func v2Params(ps []param) []spec.Parameter {
	if len(ps) == 0 {
		return nil
	}
	out := make([]spec.Parameter, len(ps))
	for i, p := range ps {
		out[i] = p.v2()
	}
	return out
}

// v2 is the Swagger 2.0 operation: the body is a parameter, and what it and the response
// may be encoded as is listed once as consumes and produces instead of per schema.
func (o *op) v2(tag string) *spec.Operation {
	if o == nil {
		return nil
	}
	out := &spec.Operation{OperationProps: spec.OperationProps{
		Tags: []string{tag}, Description: o.description, ID: o.id, Schemes: []string{"https"},
		Produces:   responseContentTypes,
		Parameters: v2Params(o.params),
		Responses:  &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{}}},
	}}
	out.AddExtension("x-kubernetes-action", o.action)
	out.AddExtension(extGVK, gvkExtension(o))
	if o.body != "" {
		out.Consumes = o.consumes()
		ref := v2Dialect.ref(o.body)
		out.Parameters = append(out.Parameters, spec.Parameter{ParamProps: spec.ParamProps{
			Name: "body", In: "body", Required: o.bodyRequired(), Schema: &ref,
		}})
	}
	if o.rawOutput != "" {
		out.Produces = []string{o.rawOutput}
	}
	for code, name := range o.responses {
		var body spec.Schema
		if o.rawOutput != "" {
			body = spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
		} else {
			body = v2Dialect.ref(name)
		}
		out.Responses.StatusCodeResponses[code] = spec.Response{ResponseProps: spec.ResponseProps{Description: statusText[code], Schema: &body}}
	}
	out.Responses.StatusCodeResponses[401] = spec.Response{ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}
	return out
}

func (rt *route) v2() spec.PathItem {
	return spec.PathItem{PathItemProps: spec.PathItemProps{
		Parameters: v2Params(rt.params),
		Get:        rt.get.v2(rt.tag), Put: rt.put.v2(rt.tag), Post: rt.post.v2(rt.tag),
		Patch: rt.patch.v2(rt.tag), Delete: rt.delete.v2(rt.tag),
	}}
}
