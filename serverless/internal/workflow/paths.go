package workflow

import (
	"encoding/json"
	"fmt"
	"strings"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/statepath"
)

func orRoot(p string) string {
	if p == "" {
		return "$"
	}
	return p
}

// selectPath is what path (a state's inputPath, outputPath, itemsPath...) selects in v.
// Selecting nothing is a States.Runtime error naming the field.
func selectPath(field, path string, v any) (any, *Error) {
	if path == "" || path == "$" {
		return v, nil
	}
	p, err := statepath.Parse(path)
	if err != nil {
		return nil, &Error{Name: serverlessv1.ErrorRuntime, Cause: fmt.Sprintf("%s %q: %v", field, path, err)}
	}
	out, ok := p.Get(v)
	if !ok {
		return nil, &Error{Name: serverlessv1.ErrorRuntime, Cause: fmt.Sprintf("%s %s selects nothing in the state's input", field, path)}
	}
	return out, nil
}

// placePath puts result into raw at path (a resultPath); "$" replaces raw.
func placePath(field, path string, raw, result any) (any, *Error) {
	if path == "" || path == "$" {
		return result, nil
	}
	p, err := statepath.Parse(path)
	if err != nil {
		return nil, &Error{Name: serverlessv1.ErrorRuntime, Cause: fmt.Sprintf("%s %q: %v", field, path, err)}
	}
	out, err := p.Set(raw, result)
	if err != nil {
		return nil, &Error{Name: serverlessv1.ErrorRuntime, Cause: fmt.Sprintf("%s: %v", field, err)}
	}
	return out, nil
}

// applyParameters builds a state's input from its parameters template: a key ending in ".$"
// takes what its path selects from v, under the key without the suffix.
func applyParameters(tmpl *serverlessv1.JSON, v any) (any, *Error) {
	t, err := decodeJSON(tmpl)
	if err != nil {
		return nil, &Error{Name: serverlessv1.ErrorRuntime, Cause: "parameters: " + err.Error()}
	}
	var fill func(t any) (any, *Error)
	fill = func(t any) (any, *Error) {
		switch c := t.(type) {
		case map[string]any:
			out := make(map[string]any, len(c))
			for k, x := range c {
				if key, ok := strings.CutSuffix(k, ".$"); ok {
					path, _ := x.(string)
					sel, err := selectPath("parameters."+k, path, v)
					if err != nil {
						return nil, err
					}
					out[key] = sel
					continue
				}
				filled, err := fill(x)
				if err != nil {
					return nil, err
				}
				out[k] = filled
			}
			return out, nil
		case []any:
			out := make([]any, len(c))
			for i, x := range c {
				filled, err := fill(x)
				if err != nil {
					return nil, err
				}
				out[i] = filled
			}
			return out, nil
		}
		return t, nil
	}
	return fill(t)
}

// number reads a JSON number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// evaluate tests a Choice rule on the input. A comparison whose variable selects nothing,
// or a value of another type, does not match.
func evaluate(r serverlessv1.ChoiceRule, input any) bool {
	switch {
	case r.And != nil:
		for _, sub := range r.And {
			if !evaluate(sub, input) {
				return false
			}
		}
		return true
	case r.Or != nil:
		for _, sub := range r.Or {
			if evaluate(sub, input) {
				return true
			}
		}
		return false
	case r.Not != nil:
		return !evaluate(*r.Not, input)
	}
	var v any
	present := false
	if p, err := statepath.Parse(orRoot(r.Variable)); err == nil {
		v, present = p.Get(input)
	}
	switch {
	case r.IsPresent != nil:
		return present == *r.IsPresent
	case !present:
		return false
	case r.IsNull != nil:
		return (v == nil) == *r.IsNull
	case r.BooleanEquals != nil:
		b, ok := v.(bool)
		return ok && b == *r.BooleanEquals
	}
	if n, ok := number(v); ok {
		switch {
		case r.NumericEquals != nil:
			return n == *r.NumericEquals
		case r.NumericLessThan != nil:
			return n < *r.NumericLessThan
		case r.NumericGreaterThan != nil:
			return n > *r.NumericGreaterThan
		case r.NumericLessThanEquals != nil:
			return n <= *r.NumericLessThanEquals
		case r.NumericGreaterThanEquals != nil:
			return n >= *r.NumericGreaterThanEquals
		}
		return false
	}
	if s, ok := v.(string); ok {
		switch {
		case r.StringEquals != nil:
			return s == *r.StringEquals
		case r.StringLessThan != nil:
			return s < *r.StringLessThan
		case r.StringGreaterThan != nil:
			return s > *r.StringGreaterThan
		case r.StringLessThanEquals != nil:
			return s <= *r.StringLessThanEquals
		case r.StringGreaterThanEquals != nil:
			return s >= *r.StringGreaterThanEquals
		}
	}
	return false
}
