package dockerstore

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
	if out.err != "The command '/bin/sh -c pip install' returned a non-zero code: 1" || out.id != "" || out.readErr != nil {
		t.Errorf("out %+v", out)
	}
	progress = nil
	ok := readBuild(strings.NewReader(`{"stream":"Step 1/1 : FROM x\n"}
{"aux":{"ID":"sha256:abc"}}
{"stream":"Successfully built abc\n"}
`), func(l string) { progress = append(progress, l) })
	if ok.id != "sha256:abc" || ok.err != "" || ok.readErr != nil {
		t.Errorf("successful build read as %+v", ok)
	}
	if d := cmp.Diff([]string{"Step 1/1 : FROM x", "Successfully built abc"}, progress); d != "" {
		t.Errorf("progress of the successful build (-want +got):\n%s", d)
	}
	broken := readBuild(strings.NewReader(`{"stream":"Step 1/1`), nil)
	if broken.readErr == nil {
		t.Error("a cut stream reads without error")
	}
}
