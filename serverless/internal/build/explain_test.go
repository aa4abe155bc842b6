package build

import (
	"strings"
	"testing"
)

func TestLogTail(t *testing.T) {
	var o logTail
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
