package cli

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

func TestParseExecuteArgs(t *testing.T) {
	tests := []struct {
		args    []string
		want    executeRequest
		wantErr string
	}{
		{args: []string{"default/add", `{"a":1}`}, want: executeRequest{resource: "functions", namespace: "default", name: "add", data: `{"a":1}`}},
		{args: []string{"add"}, want: executeRequest{resource: "functions", name: "add"}},
		{args: []string{"function", "ns1/add", "-"}, want: executeRequest{resource: "functions", namespace: "ns1", name: "add", data: "-"}},
		{args: []string{"fn", "add"}, want: executeRequest{resource: "functions", name: "add"}},
		{args: []string{"workflow", "default/flow", `{}`}, want: executeRequest{resource: "workflows", namespace: "default", name: "flow", data: "{}"}},
		{args: []string{"wf", "flow"}, want: executeRequest{resource: "workflows", name: "flow"}},
		// A lone "function" is the name of a function.
		{args: []string{"function"}, want: executeRequest{resource: "functions", name: "function"}},
		{args: nil, wantErr: "want [function|workflow]"},
		{args: []string{"workflow", "a", "{}", "x"}, wantErr: "want [function|workflow]"},
		{args: []string{"Bad_Name"}, wantErr: `invalid function name "Bad_Name"`},
		{args: []string{"NS/add"}, wantErr: `invalid namespace "NS"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parseExecuteArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(executeRequest{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestExecuteData(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "in.json")
	writeTestFile(t, good, `{"n": 2}`)
	bad := filepath.Join(dir, "bad.json")
	writeTestFile(t, bad, `{"n": }`)
	tests := []struct {
		name, arg, file, stdin, want, wantErr string
	}{
		{name: "none", want: "{}"},
		{name: "argument", arg: `[1, 2]`, want: `[1, 2]`},
		{name: "stdin argument", arg: "-", stdin: `{"s": "x"}`, want: `{"s": "x"}`},
		{name: "stdin file", file: "-", stdin: `3`, want: `3`},
		{name: "file", file: good, want: `{"n": 2}`},
		{name: "both", arg: "{}", file: good, wantErr: "not both"},
		{name: "not JSON", arg: `{a:1}`, wantErr: "the data is not JSON"},
		{name: "bad file", file: bad, wantErr: bad + " is not JSON"},
		{name: "missing file", file: filepath.Join(dir, "nope.json"), wantErr: "nope.json: no such file"},
		{name: "empty stdin", arg: "-", wantErr: "stdin is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := executeData(tt.arg, tt.file, strings.NewReader(tt.stdin))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// execute posts to the invoke subresource and prints the answer; a refusal prints the code
// and the message of whoever refused, and exits 1.
func TestExecute(t *testing.T) {
	var gotBody, gotType string
	invoke := func(code int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			gotBody, gotType = string(b), r.Header.Get("Content-Type")
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(serverlessv1.HeaderServedBy, "add-7d9f-x1")
			w.WriteHeader(code)
			io.WriteString(w, body)
		}
	}
	base := "/apis/serverless.minik8s.io/v1/namespaces/"
	f := &fakeAPI{routes: map[string]http.HandlerFunc{
		"POST " + base + "default/functions/add/invoke":  invoke(200, `{"sum":3}`),
		"POST " + base + "team/functions/add/invoke":     invoke(200, `{"sum":4}`),
		"POST " + base + "default/workflows/flow/invoke": invoke(200, `{"path":"big"}`),
		"POST " + base + "default/functions/boom/invoke": invoke(502, `{"error":"ZeroDivisionError: division by zero","traceback":"  File \"main.py\", line 2, in handle\nZeroDivisionError: division by zero\n"}`),
		"POST " + base + "default/functions/slow/invoke": invoke(504, `{"error":"the function did not answer within 30s"}`),
		"POST " + base + "default/functions/busy/invoke": invoke(429, "too many calls waiting\n"),
	}}
	input := filepath.Join(t.TempDir(), "in.json")
	writeTestFile(t, input, `{"a": 2, "b": 2}`)
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantOut  string
		wantErr  string
		wantCode int
		wantBody string
	}{
		{name: "function", args: []string{"execute", "default/add", `{"a":1,"b":2}`}, wantOut: "{\"sum\":3}\n", wantBody: `{"a":1,"b":2}`},
		{name: "kind word and -n", args: []string{"execute", "function", "add", "-n", "team", "-f", input}, wantOut: "{\"sum\":4}\n", wantBody: `{"a": 2, "b": 2}`},
		{name: "pretty from stdin", args: []string{"execute", "add", "-", "--pretty", "--served-by"}, stdin: `{"a":1}`,
			wantOut: "{\n  \"sum\": 3\n}\n", wantErr: "served by add-7d9f-x1\n", wantBody: `{"a":1}`},
		{name: "workflow", args: []string{"execute", "workflow", "default/flow"}, wantOut: "{\"path\":\"big\"}\n", wantBody: `{}`},
		{name: "handler raised", args: []string{"execute", "boom", "{}"}, wantCode: 1,
			wantErr: "error: function default/boom: 502 Bad Gateway: ZeroDivisionError: division by zero\n  File \"main.py\", line 2, in handle\nZeroDivisionError: division by zero\n"},
		{name: "timeout", args: []string{"execute", "slow"}, wantCode: 1,
			wantErr: "error: function default/slow: 504 Gateway Timeout: the function did not answer within 30s\n"},
		{name: "saturated", args: []string{"execute", "busy"}, wantCode: 1,
			wantErr: "error: function default/busy: 429 Too Many Requests: too many calls waiting\n"},
		{name: "unknown", args: []string{"execute", "workflow", "nope"}, wantCode: 1,
			wantErr: "error: workflow default/nope: 404 Not Found: things \"" + base + "default/workflows/nope/invoke\" not found\n"},
		{name: "not JSON", args: []string{"execute", "add", "{nope"}, wantCode: 1, wantErr: "error: the data is not JSON"},
		{name: "namespace mismatch", args: []string{"execute", "a/add", "-n", "b"}, wantCode: 1, wantErr: `does not match the namespace "b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotBody, gotType = "", ""
			out, errOut, code := run(t, f, tt.stdin, tt.args...)
			if code != tt.wantCode || out != tt.wantOut {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q", code, out, errOut, tt.wantCode, tt.wantOut)
			}
			if tt.wantCode == 0 && errOut != tt.wantErr || tt.wantCode != 0 && !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr = %q, want %q", errOut, tt.wantErr)
			}
			if tt.wantBody != "" && (gotBody != tt.wantBody || gotType != "application/json") {
				t.Errorf("sent %q as %q, want %q", gotBody, gotType, tt.wantBody)
			}
		})
	}
}

func TestInvokeFailureWording(t *testing.T) {
	res, _ := lookup("functions")
	st := apierror.New(apierror.ErrUnavailable, "the serverless gateway is not configured on this apiserver (--serverless-gateway-url)").Status
	body := mustJSON(t, st)
	got := invokeFailure(res, "default", "add", 503, []byte(body))
	want := "error: function default/add: 503 Service Unavailable: the serverless gateway is not configured on this apiserver (--serverless-gateway-url)\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := invokeFailure(res, "default", "add", 500, nil); got != "error: function default/add: 500 Internal Server Error: Internal Server Error\n" {
		t.Errorf("empty body: %q", got)
	}
	// A handler's error as the apiserver words it: the exception first, the traceback after.
	handler := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Code: 502,
		Message: "function default/div: ZeroDivisionError: division by zero\n  File \"/function/main.py\", line 2\n"}
	got = invokeFailure(res, "default", "div", 502, []byte(mustJSON(t, handler)))
	want = "error: function default/div: 502 Bad Gateway: ZeroDivisionError: division by zero\n  File \"/function/main.py\", line 2\n"
	if got != want {
		t.Errorf("handler error: got %q, want %q", got, want)
	}
}
