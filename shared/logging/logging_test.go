package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewJSON(t *testing.T) {
	var buf bytes.Buffer
	log := New("scheduler", "debug", "json", &buf)
	log.Debug("bound", KeyPod, "web/nginx", KeyNode, "n1", Err(errors.New("boom")))
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("output %q is not one JSON object: %v", buf.String(), err)
	}
	delete(got, "time")
	want := map[string]any{"level": "DEBUG", "msg": "bound", "component": "scheduler", "pod": "web/nginx", "node": "n1", "err": "boom"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("line (-want +got):\n%s", diff)
	}
}

func TestLevels(t *testing.T) {
	tests := []struct {
		level string
		want  []string // messages that appear
	}{
		{"debug", []string{"d", "i", "w", "e"}},
		{"", []string{"i", "w", "e"}},
		{"INFO", []string{"i", "w", "e"}},
		{"warn", []string{"w", "e"}},
		{"error", []string{"e"}},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			var buf bytes.Buffer
			log := New("c", tt.level, "text", &buf)
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			log.Error("e")
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if !strings.Contains(line, "component=c") {
					t.Errorf("line without the component attribute: %q", line)
				}
				for _, m := range []string{"d", "i", "w", "e"} {
					if strings.Contains(line, "msg="+m+" ") {
						got = append(got, m)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBadOptionsFallBackLoudly(t *testing.T) {
	var buf bytes.Buffer
	log := New("c", "loud", "xml", &buf)
	log.Info("hello")
	out := buf.String()
	if !strings.Contains(out, "bad logging options") || !strings.Contains(out, `log level \"loud\"`) || !strings.Contains(out, `log format \"xml\"`) {
		t.Errorf("output %q does not explain the fallback", out)
	}
	if !strings.Contains(out, "msg=hello") {
		t.Errorf("output %q: want text format at info", out)
	}
}

func TestOptionsFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    Options
		wantErr bool
	}{
		{"defaults", nil, Options{Level: "info", Format: "text"}, false},
		{"set", []string{"--log-level=debug", "--log-format=json"}, Options{Level: "debug", Format: "json"}, false},
		{"bad level", []string{"--log-level=verbose"}, Options{Level: "verbose", Format: "text"}, true},
		{"bad format", []string{"--log-format=yaml"}, Options{Level: "info", Format: "yaml"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o Options
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, o); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
			if err := o.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "warning": slog.LevelWarn, " Error ": slog.LevelError} {
		t.Run(in, func(t *testing.T) {
			got, err := ParseLevel(in)
			if err != nil || got != want {
				t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
			}
		})
	}
}
