package streaming

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Options are what an exec or attach request asks for, from the query the kubelet reads.
type Options struct {
	// Command is the exec's command line; empty for attach.
	Command []string
	Stdin   bool
	Stdout  bool
	// Stderr is false with a TTY: a terminal has one output.
	Stderr bool
	TTY    bool
}

// ExecOptions reads an exec request's query: command (repeated), input, output, error, tty.
func ExecOptions(q url.Values) (Options, error) {
	o, err := attachOptions(q)
	if err != nil {
		return Options{}, err
	}
	o.Command = q["command"]
	if len(o.Command) == 0 || o.Command[0] == "" {
		return Options{}, errors.New("query parameter \"command\" is required: the command to run, one parameter per argument")
	}
	return o, nil
}

// AttachOptions reads an attach request's query: input, output, error, tty.
func AttachOptions(q url.Values) (Options, error) {
	return attachOptions(q)
}

func attachOptions(q url.Values) (Options, error) {
	var o Options
	// The kubelet's names, and PodExecOptions' for a caller that passes kubectl's query on.
	for _, f := range []struct {
		dst   *bool
		names []string
	}{
		{&o.Stdin, []string{"input", "stdin"}},
		{&o.Stdout, []string{"output", "stdout"}},
		{&o.Stderr, []string{"error", "stderr"}},
		{&o.TTY, []string{"tty"}},
	} {
		v, err := flag(q, f.names...)
		if err != nil {
			return Options{}, err
		}
		*f.dst = v
	}
	if o.TTY {
		o.Stderr = false
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return Options{}, errors.New("you must specify at least one of input, output and error")
	}
	return o, nil
}

// flag reads the first of names present in q: "1" or "true" (any form strconv accepts).
func flag(q url.Values, names ...string) (bool, error) {
	for _, name := range names {
		if !q.Has(name) {
			continue
		}
		v := q.Get(name)
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("query parameter %q must be 1, 0, true or false, not %q", name, v)
		}
		return b, nil
	}
	return false, nil
}

// Ports reads the ports of a WebSocket port-forward: ports=8080,9090 (the parameter may also
// repeat).
func Ports(q url.Values) ([]uint16, error) {
	var out []uint16
	for _, v := range q["ports"] {
		for _, s := range strings.Split(v, ",") {
			p, err := parsePort(strings.TrimSpace(s))
			if err != nil {
				return nil, fmt.Errorf("query parameter \"ports\": %w", err)
			}
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("query parameter \"ports\" is required: the pod's ports to forward, e.g. ports=8080,9090")
	}
	return out, nil
}

func parsePort(s string) (uint16, error) {
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%q is not a port number (1-65535)", s)
	}
	return uint16(p), nil
}
