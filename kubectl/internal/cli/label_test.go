package cli

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const labeledNode = `{"apiVersion":"v1","kind":"Node","metadata":{"name":"vm","resourceVersion":"7","labels":{"kubernetes.io/hostname":"vm","disk":"hdd"}}}`

func TestLabel(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantOut   string
		wantErr   string // a substring of stderr
		wantCode  int
		wantPatch string // "" means no PATCH may be sent
	}{
		{name: "add", args: []string{"label", "node", "vm", "zone=a"}, wantOut: "node/vm labeled\n",
			wantPatch: `{"metadata":{"labels":{"zone":"a"}}}`},
		{name: "TYPE/NAME form", args: []string{"label", "nodes/vm", "zone=a", "tier=edge"}, wantOut: "node/vm labeled\n",
			wantPatch: `{"metadata":{"labels":{"tier":"edge","zone":"a"}}}`},
		{name: "change without --overwrite", args: []string{"label", "node", "vm", "disk=ssd"}, wantCode: 1,
			wantErr: "'disk' already has a value (hdd), and --overwrite is false"},
		{name: "change with --overwrite", args: []string{"label", "--overwrite", "node", "vm", "disk=ssd"}, wantOut: "node/vm labeled\n",
			wantPatch: `{"metadata":{"labels":{"disk":"ssd"}}}`},
		{name: "remove", args: []string{"label", "node", "vm", "disk-"}, wantOut: "node/vm unlabeled\n",
			wantPatch: `{"metadata":{"labels":{"disk":null}}}`},
		{name: "remove a missing label", args: []string{"label", "node", "vm", "gpu-"}, wantOut: "node/vm not labeled\n",
			wantErr: `label "gpu" not found.`},
		{name: "same value", args: []string{"label", "node", "vm", "disk=hdd"}, wantOut: "node/vm not labeled\n"},
		{name: "invalid key", args: []string{"label", "node", "vm", "bad_=x"}, wantCode: 1, wantErr: "invalid label spec: bad_=x: key"},
		{name: "invalid value", args: []string{"label", "node", "vm", "disk=" + strings.Repeat("x", 64)}, wantCode: 1,
			wantErr: "value: must be no more than 63 "},
		{name: "set and remove at once", args: []string{"label", "node", "vm", "disk=ssd", "disk-"}, wantCode: 1,
			wantErr: `can not both modify and remove the label "disk"`},
		{name: "no label", args: []string{"label", "node", "vm"}, wantCode: 1, wantErr: "at least one label update is required"},
		{name: "no resource", args: []string{"label", "zone=a"}, wantCode: 1, wantErr: "one or more resources must be specified"},
		{name: "list", args: []string{"label", "--list", "node", "vm"},
			wantOut: "Listing labels for node/vm:\n disk=hdd\n kubernetes.io/hostname=vm\n"},
		{name: "list ignores changes", args: []string{"label", "--list", "node", "vm", "zone=a"},
			wantOut: "Listing labels for node/vm:\n disk=hdd\n kubernetes.io/hostname=vm\n"},
		{name: "a resource after a label", args: []string{"label", "node", "vm", "zone=a", "extra"}, wantCode: 1,
			wantErr: "all resources must be specified before label changes: extra"},
		{name: "remove a long one, add a short one", args: []string{"label", "node", "vm", "kubernetes.io/hostname-", "z=a"},
			wantOut: "node/vm unlabeled\n", wantPatch: `{"metadata":{"labels":{"kubernetes.io/hostname":null,"z":"a"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var patch, contentType string
			f := &fakeAPI{routes: map[string]http.HandlerFunc{
				"GET /api/v1/nodes/vm": jsonReply(labeledNode),
				"PATCH /api/v1/nodes/vm": func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					mu.Lock()
					patch, contentType = string(b), r.Header.Get("Content-Type")
					mu.Unlock()
					jsonReply(labeledNode)(w, r)
				},
			}}
			out, errOut, code := run(t, f, "", tt.args...)
			if code != tt.wantCode || out != tt.wantOut || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, stderr with %q", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tt.wantPatch, patch); diff != "" {
				t.Errorf("patch sent (-want +got):\n%s", diff)
			}
			if patch != "" && contentType != "application/merge-patch+json" {
				t.Errorf("patch content type %q, want a merge patch", contentType)
			}
		})
	}
}
