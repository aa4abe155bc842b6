package crdschema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// validWidget is a Widget that passes every check of version v1.
const validWidget = `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default, labels: {app: w}}
spec:
  replicas: 3
  minReplicas: 1
  color: red
  name: abc
  tags: [a, b]
  port: 80
  note: null
  template: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: []}}
  config: {anything: {goes: [1, true]}}
status: {replicas: 2, selector: app=w}
`

func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want []string
	}{
		{name: "valid", obj: validWidget},
		{
			name: "int-or-string as a string",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: red, port: http}",
		},
		{
			name: "type",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: red, replicas: string}",
			want: []string{
				// The scale subresource reads the same path; upstream names
				// the field as written in the CRD, leading dot included.
				`.spec.replicas: Invalid value: 0: .spec.replicas accessor error: string is of the type string, expected int64`,
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`,
			},
		},
		{
			name: "required",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {replicas: 1}",
			want: []string{
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				`spec.color: Required value`,
			},
		},
		{
			name: "enum",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: pink}",
			want: []string{
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				`spec.color: Unsupported value: "pink": supported values: "red", "green", "blue"`,
			},
		},
		{
			// The string validator stops at the first failed keyword.
			name: "minLength before pattern",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: red, name: A}",
			want: []string{
				`spec.name: Invalid value: "A": spec.name in body should be at least 2 chars long`,
			},
		},
		{
			name: "maxLength",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: red, name: abcdefg}",
			want: []string{
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				`spec.name: Too long: may not be more than 5 bytes`,
			},
		},
		{
			name: "minimum and maximum",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: red, replicas: 11, minReplicas: 0}\nstatus: {replicas: -1}",
			want: []string{
				`.status.replicas: Invalid value: -1: should be a non-negative integer`,
				`spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`,
				`status.replicas: Invalid value: -1: status.replicas in body should be greater than or equal to 0`,
			},
		},
		{
			name: "items and maxItems",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: red, tags: [a, 2, c]}",
			want: []string{
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				`spec.tags: Too many: 3: must have at most 2 items`,
				`spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer"`,
			},
		},
		{
			name: "null where not nullable",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: red, ratio: null}",
			want: []string{
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				`spec.ratio: Invalid value: "null": spec.ratio in body must be of type number: "null"`,
			},
		},
		{
			name: "int-or-string of another type",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: red, port: true}",
			want: []string{
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				`spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`,
			},
		},
		{
			name: "embedded resource",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: red, template: {apiVersion: v1, metadata: {name: a/b}}}",
			// Embedded names need only be path segments.
			want: []string{
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				`spec.template.kind: Required value`,
				`spec.template.metadata.name: Invalid value: "a/b": may not contain '/'`,
			},
		},
		{
			name: "set list with a duplicate",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: red, tags: [a, a]}",
			want: []string{`spec.tags[1]: Duplicate value: "a"`},
		},
		{
			name: "object metadata",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: Bad_Name, labels: {'bad key!': x}, annotations: {'a/b/c': x}}\nspec: {color: red}",
			want: []string{
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				`metadata.annotations: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
				`metadata.labels: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				`metadata.namespace: Required value`,
			},
		},
		{
			name: "apiVersion and kind",
			obj:  "apiVersion: example.com/v2\nkind: Gadget\nmetadata: {name: w1, namespace: default}\nspec: {color: 7}",
			want: []string{
				`apiVersion: Invalid value: "example.com/v2": must be example.com/v1`,
				`kind: Invalid value: "Gadget": must be Widget`,
			},
		},
		{
			name: "CEL rule",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {color: red, replicas: 2, minReplicas: 3}",
			want: []string{
				`spec: Invalid value: minReplicas must not exceed replicas`,
			},
		},
	}
	v := widgetVersion(t, "v1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errorStrings(v.Validate(object(t, tt.obj), nil))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	// old was stored before the schema got its maximum of 10.
	old := "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default, resourceVersion: '5'}\nspec: {color: red, replicas: 20}"
	tests := []struct {
		name string
		obj  string
		want []string
	}{
		{
			name: "unchanged invalid field is ratcheted",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default, resourceVersion: '5'}\nspec: {color: blue, replicas: 20}",
		},
		{
			name: "changed invalid field is reported",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default, resourceVersion: '5'}\nspec: {color: red, replicas: 30}",
			want: []string{`spec.replicas: Invalid value: 30: spec.replicas in body should be less than or equal to 10`},
		},
		{
			name: "name is immutable",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2, namespace: default, resourceVersion: '5'}\nspec: {color: red, replicas: 20}",
			want: []string{`metadata.name: Invalid value: "w2": field is immutable`},
		},
	}
	v := widgetVersion(t, "v1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errorStrings(v.Validate(object(t, tt.obj), object(t, old)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateStatus(t *testing.T) {
	old := "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default, resourceVersion: '5'}\nspec: {color: red, replicas: 1}\nstatus: {replicas: 1}"
	tests := []struct {
		name string
		obj  string
		want []string
	}{
		{
			name: "valid",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default, resourceVersion: '5'}\nspec: {color: red, replicas: 1}\nstatus: {replicas: 2, ready: true, selector: app=w}",
		},
		{
			// Only status is checked against the schema: the spec below is
			// what the caller copied from old.
			name: "status against its schema",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default, resourceVersion: '5'}\nspec: {color: pink}\nstatus: {replicas: -2, ready: 'yes'}",
			want: []string{
				// The status schema is the validator's root, so the
				// message names the field without "status.".
				`.status.replicas: Invalid value: -2: should be a non-negative integer`,
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				`status.ready: Invalid value: "string": ready in body must be of type boolean: "string"`,
				`status.replicas: Invalid value: -2: replicas in body should be greater than or equal to 0`,
			},
		},
		{
			name: "scale selector must be a string",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default, resourceVersion: '5'}\nspec: {color: red, replicas: 1}\nstatus: {selector: 3}",
			want: []string{
				`.status.selector: Invalid value: "": .status.selector accessor error: 3 is of the type int64, expected string`,
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				`status.selector: Invalid value: "integer": selector in body must be of type string: "integer"`,
			},
		},
	}
	v := widgetVersion(t, "v1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errorStrings(v.ValidateStatus(object(t, tt.obj), object(t, old)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ValidateStatus (-want +got):\n%s", diff)
			}
		})
	}
}
