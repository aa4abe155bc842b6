package monsuite

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestReport(t *testing.T) {
	r := &Report{Window: 100 * time.Second,
		Stack:   []Group{{Name: "prometheus", CPU: 3 * time.Second, RSS: 60 << 20}, {Name: "node-exporter", CPU: time.Second, RSS: 10 << 20}},
		Control: []Group{{Name: "apiserver", CPU: 2 * time.Second, RSS: 100 << 20}, {Name: "kubelet", CPU: 2 * time.Second}},
		Machine: 20 * time.Second}
	c, m := r.Totals()
	if c != 0.04 || m != 70<<20 {
		t.Errorf("totals %v cores %d bytes, want 0.04 and %d", c, m, 70<<20)
	}
	var b bytes.Buffer
	r.Print(&b)
	for _, want := range []string{"| **monitoring stack** | **0.0400** | **70** |", "| whole machine (busy) | 0.2000 |",
		"CPU under 0.05 cores (met), memory under 300 MiB (met)", "kubelet: 1.00x"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	r.Stack[0].CPU = 10 * time.Second
	b.Reset()
	r.Print(&b)
	if !strings.Contains(b.String(), "CPU under 0.05 cores (not met)") {
		t.Errorf("0.11 cores reported as meeting the goal:\n%s", b.String())
	}
}
