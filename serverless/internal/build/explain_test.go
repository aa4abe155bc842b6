package build

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stream is a build's message stream as Docker's classic builder sends it.
const stream = `{"stream":"Step 1/6 : FROM minik8s/python-runtime:latest"}
{"stream":"\n"}
{"stream":" ---\u003e b2ed50df89ce\n"}
{"stream":"Step 3/6 : RUN pip install --no-cache-dir --retries 1 --timeout 10 -r /opt/minik8s/requirements.txt\n"}
{"stream":" ---\u003e Running in e8f66a0e980a\n"}
{"stream":"\u001b[91mWARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('\u003cpip._vendor.urllib3.connection.HTTPSConnection object at 0x7fad084d44d0\u003e: Failed to establish a new connection: [Errno -2] Name or service not known')': /simple/flask/\n\u001b[0m"}
{"stream":"\u001b[91mERROR: Could not find a version that satisfies the requirement flask (from versions: none)\n\u001b[0m\u001b[91mERROR: No matching "}
{"stream":"distribution found for flask\n\u001b[0m"}
{"errorDetail":{"code":1,"message":"The command '/bin/sh -c pip install' returned a non-zero code: 1"},"error":"The command '/bin/sh -c pip install' returned a non-zero code: 1"}
`

func TestReadBuild(t *testing.T) {
	var progress []string
	out := readBuild(strings.NewReader(stream), func(l string) { progress = append(progress, l) })
	want := []string{
		"Step 1/6 : FROM minik8s/python-runtime:latest",
		" ---> b2ed50df89ce",
		"Step 3/6 : RUN pip install --no-cache-dir --retries 1 --timeout 10 -r /opt/minik8s/requirements.txt",
		" ---> Running in e8f66a0e980a",
		"WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7fad084d44d0>: Failed to establish a new connection: [Errno -2] Name or service not known')': /simple/flask/",
		"ERROR: Could not find a version that satisfies the requirement flask (from versions: none)",
		"ERROR: No matching distribution found for flask",
	}
	if d := cmp.Diff(want, progress); d != "" {
		t.Errorf("progress (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, out.lines); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
	if out.err != "The command '/bin/sh -c pip install' returned a non-zero code: 1" || out.id != "" || out.readErr != nil {
		t.Errorf("out %+v", out)
	}
	ok := readBuild(strings.NewReader(`{"stream":"Step 1/1 : FROM x\n"}
{"aux":{"ID":"sha256:abc"}}
{"stream":"Successfully built abc\n"}
`), nil)
	if ok.id != "sha256:abc" || ok.err != "" || ok.tail() != "Step 1/1 : FROM x\nSuccessfully built abc" {
		t.Errorf("successful build read as %+v", ok)
	}
	broken := readBuild(strings.NewReader(`{"stream":"Step 1/1`), nil)
	if broken.readErr == nil {
		t.Error("a cut stream reads without error")
	}
}

func TestLogTail(t *testing.T) {
	var o buildOutput
	for i := 0; i < 1000; i++ {
		o.add(strings.Repeat("x", i%7))
	}
	if n := strings.Count(o.tail(), "\n") + 1; n != logTailLines {
		t.Errorf("tail has %d lines, want %d", n, logTailLines)
	}
	if len(o.lines) > 4*logTailLines {
		t.Errorf("kept %d lines", len(o.lines))
	}
}

func TestExplain(t *testing.T) {
	pipStep := "Step 3/6 : RUN pip install --no-cache-dir -r /opt/minik8s/requirements.txt"
	for _, tc := range []struct {
		name  string
		err   string
		lines []string
		want  string
	}{
		{"no index", "returned a non-zero code: 1", []string{pipStep,
			"WARNING: Retrying (...) after connection broken by 'NewConnectionError('<...>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/x/",
			"ERROR: Could not find a version that satisfies the requirement x (from versions: none)",
			"ERROR: No matching distribution found for x"},
			"installing requirements with pip failed: no package index answered (Temporary failure in name resolution): ERROR: No matching distribution found for x"},
		{"index without the package", "returned a non-zero code: 1", []string{pipStep,
			"ERROR: Could not find a version that satisfies the requirement nope==9 (from versions: 1.0)",
			"ERROR: No matching distribution found for nope==9"},
			"installing requirements with pip failed: ERROR: No matching distribution found for nope==9"},
		{"bad requirements file", "returned a non-zero code: 1", []string{pipStep,
			"ERROR: Invalid requirement: '!!' (from line 1 of /opt/minik8s/requirements.txt)"},
			"installing requirements with pip failed: ERROR: Invalid requirement: '!!' (from line 1 of /opt/minik8s/requirements.txt)"},
		{"pip without an ERROR line", "returned a non-zero code: 2", []string{pipStep, "Killed"},
			"installing requirements with pip failed: returned a non-zero code: 2"},
		{"syntax error", "returned a non-zero code: 1", []string{
			"Step 3/3 : RUN python3 -m compileall -q /function && echo main.handler > /opt/minik8s/function/handler",
			"*** Error compiling '/function/lib/x.py'...",
			`  File "/function/lib/x.py", line 3`,
			"    def f(:",
			"          ^",
			"SyntaxError: invalid syntax"},
			"the source does not compile: lib/x.py line 3: SyntaxError: invalid syntax"},
		{"base missing", "pull access denied for minik8s/python-runtime, repository does not exist", []string{
			"Step 1/6 : FROM minik8s/python-runtime:latest"},
			"the runtime base image is missing (make images builds minik8s/python-runtime): pull access denied for minik8s/python-runtime, repository does not exist"},
		{"anything else", "no space left on device", []string{"Step 4/6 : COPY function/ /function/"},
			"no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Explain(tc.err, tc.lines); got != tc.want {
				t.Errorf("Explain =\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
}
