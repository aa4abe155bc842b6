package statepath

import (
	"fmt"
	"strconv"
	"strings"
)

// step is one member name or array index of a path.
type step struct {
	key   string
	index int
	isIdx bool
}

// Path is a parsed path; the empty Path is "$", the whole document.
type Path struct {
	steps []step
	text  string
}

// String is the path as written.
func (p Path) String() string {
	if p.text == "" {
		return "$"
	}
	return p.text
}

// Root reports whether the path is "$".
func (p Path) Root() bool { return len(p.steps) == 0 }

// Parse reads a path: "$" then any number of ".name", "['name']" or "[index]".
func Parse(s string) (Path, error) {
	if !strings.HasPrefix(s, "$") {
		return Path{}, fmt.Errorf(`must start with "$"`)
	}
	p := Path{text: s}
	rest := s[1:]
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			n := strings.IndexAny(rest, ".[")
			if n < 0 {
				n = len(rest)
			}
			name := rest[:n]
			if name == "" {
				return Path{}, fmt.Errorf("empty member name at offset %d", len(s)-len(rest))
			}
			if strings.ContainsAny(name, "*]'\" ") || strings.HasPrefix(name, "@") {
				return Path{}, fmt.Errorf("member name %q: wildcards, filters and spaces are not supported (write ['a b'] for a name with spaces)", name)
			}
			p.steps = append(p.steps, step{key: name})
			rest = rest[n:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return Path{}, fmt.Errorf("unclosed [ at offset %d", len(s)-len(rest))
			}
			inner := rest[1:end]
			switch {
			case len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0]:
				p.steps = append(p.steps, step{key: inner[1 : len(inner)-1]})
			default:
				i, err := strconv.Atoi(inner)
				if err != nil || i < 0 {
					return Path{}, fmt.Errorf("[%s]: an index must be a non-negative integer or a quoted name", inner)
				}
				p.steps = append(p.steps, step{index: i, isIdx: true})
			}
			rest = rest[end+1:]
		default:
			return Path{}, fmt.Errorf("unexpected %q at offset %d", rest[0], len(s)-len(rest))
		}
	}
	return p, nil
}

// MustParse parses a path known to be valid.
func MustParse(s string) Path {
	p, err := Parse(s)
	if err != nil {
		panic(fmt.Sprintf("statepath %q: %v", s, err))
	}
	return p
}

// Get returns what the path selects in v, a document decoded from JSON (maps, slices and
// scalars), and whether it selects anything.
func (p Path) Get(v any) (any, bool) {
	for _, s := range p.steps {
		switch c := v.(type) {
		case map[string]any:
			if s.isIdx {
				return nil, false
			}
			var ok bool
			if v, ok = c[s.key]; !ok {
				return nil, false
			}
		case []any:
			if !s.isIdx || s.index >= len(c) {
				return nil, false
			}
			v = c[s.index]
		default:
			return nil, false
		}
	}
	return v, true
}

// Set returns root with the value at the path replaced by val, making the objects the path
// goes through when missing. root itself is not changed: the maps and slices on the path
// are copied. It fails when the path goes through something that is neither an object nor
// an array, or indexes past an array's end.
func (p Path) Set(root, val any) (any, error) {
	return set(root, p.steps, val, p)
}

func set(v any, steps []step, val any, p Path) (any, error) {
	if len(steps) == 0 {
		return val, nil
	}
	s := steps[0]
	switch c := v.(type) {
	case nil:
		if s.isIdx {
			return nil, fmt.Errorf("path %s: no array to index", p)
		}
		inner, err := set(nil, steps[1:], val, p)
		if err != nil {
			return nil, err
		}
		return map[string]any{s.key: inner}, nil
	case map[string]any:
		if s.isIdx {
			return nil, fmt.Errorf("path %s: an object has no index [%d]", p, s.index)
		}
		inner, err := set(c[s.key], steps[1:], val, p)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(c)+1)
		for k, x := range c {
			out[k] = x
		}
		out[s.key] = inner
		return out, nil
	case []any:
		if !s.isIdx || s.index >= len(c) {
			return nil, fmt.Errorf("path %s: outside the array (length %d)", p, len(c))
		}
		inner, err := set(c[s.index], steps[1:], val, p)
		if err != nil {
			return nil, err
		}
		out := append([]any(nil), c...)
		out[s.index] = inner
		return out, nil
	default:
		return nil, fmt.Errorf("path %s: goes through a %T, not an object", p, v)
	}
}
