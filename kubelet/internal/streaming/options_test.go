package streaming

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExecOptions(t *testing.T) {
	for _, tc := range []struct {
		query   string
		want    Options
		wantErr string
	}{
		{query: "command=sh&command=-c&command=echo+hi&output=1&error=1",
			want: Options{Command: []string{"sh", "-c", "echo hi"}, Stdout: true, Stderr: true}},
		{query: "command=cat&input=1&output=1&error=1&tty=1",
			want: Options{Command: []string{"cat"}, Stdin: true, Stdout: true, TTY: true}},
		// PodExecOptions' names, as kubectl sends them to the apiserver.
		{query: "command=cat&stdin=true&stdout=true&stderr=false",
			want: Options{Command: []string{"cat"}, Stdin: true, Stdout: true}},
		{query: "command=cat&input=0&output=1&stdin=true", want: Options{Command: []string{"cat"}, Stdout: true}},
		{query: "output=1", wantErr: `"command" is required`},
		{query: "command=&output=1", wantErr: `"command" is required`},
		{query: "command=true", wantErr: "at least one of input, output and error"},
		{query: "command=true&error=1&tty=1", wantErr: "at least one of input, output and error"},
		{query: "command=true&output=yes", wantErr: `query parameter "output" must be 1, 0, true or false, not "yes"`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			got, err := ExecOptions(q)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ExecOptions(%s) = %+v, %v; want an error with %q", tc.query, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ExecOptions(%s) (-want +got):\n%s", tc.query, diff)
			}
		})
	}
}

func TestPorts(t *testing.T) {
	for _, tc := range []struct {
		query   string
		want    []uint16
		wantErr string
	}{
		{"ports=8080,9090", []uint16{8080, 9090}, ""},
		{"ports=80&ports=443", []uint16{80, 443}, ""},
		{"ports=+8080+", []uint16{8080}, ""},
		{"", nil, `"ports" is required`},
		{"ports=0", nil, `"0" is not a port number`},
		{"ports=65536", nil, `"65536" is not a port number`},
		{"ports=http", nil, `"http" is not a port number`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			got, err := Ports(q)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if !cmp.Equal(tc.want, got) || !strings.Contains(gotErr, tc.wantErr) || (tc.wantErr == "") != (err == nil) {
				t.Errorf("Ports(%s) = %v, %v; want %v, an error with %q", tc.query, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestWriteStatus is what the error stream carries: a Status from v4 on (the exit code as
// kubectl reads it), the message before, and nothing for an old protocol's success.
func TestWriteStatus(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		err      error
		want     string
	}{
		{protoV5, nil, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}`},
		{protoV4, ExitError{Code: 3}, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
			`"message":"command terminated with non-zero exit code: command terminated with exit code 3",` +
			`"reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}`},
		{spdyV4, fmt.Errorf("exec: %w", ExitError{Code: 130}), `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
			`"message":"command terminated with non-zero exit code: command terminated with exit code 130",` +
			`"reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"130"}]}}`},
		{protoV4Base64, errors.New("no such file"), `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
			`"message":"error executing command in container: no such file","reason":"InternalError",` +
			`"details":{"causes":[{"message":"no such file"}]},"code":500}`},
		{protoV1, nil, ""},
		{spdyV2, ExitError{Code: 3}, "command terminated with non-zero exit code: command terminated with exit code 3"},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.protocol, tc.err), func(t *testing.T) {
			var b bytes.Buffer
			if err := writeStatus(&b, tc.protocol, tc.err); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("error stream (-want +got):\n%s", diff)
			}
		})
	}
}
