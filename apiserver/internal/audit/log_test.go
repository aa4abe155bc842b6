package audit

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Events are JSON lines, and the file rotates once it reaches its size.
func TestLogWritesAndRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	l := NewLog(LogOptions{Path: path, MaxSizeMB: 1, MaxBackups: 3}, slog.New(slog.DiscardHandler))
	big := strings.Repeat("x", 4096)
	for i := 0; i < 400; i++ { // about 1.6 MB
		l.Write(&Event{Level: LevelMetadata, Stage: StageResponseComplete, RequestURI: "/api/v1/" + big, Verb: "get"})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "audit*.log"))
	if len(files) < 2 {
		t.Fatalf("files %v: want the log and at least one rotated file", files)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lines := 0
	for sc.Scan() {
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		if ev.Verb != "get" || ev.Stage != StageResponseComplete {
			t.Fatalf("line %d decoded as %+v", lines, ev)
		}
		lines++
	}
	if lines == 0 || lines == 400 {
		t.Fatalf("%d lines in the current file: want some, not all", lines)
	}
	if l.Dropped() != 0 {
		t.Fatalf("%d events dropped", l.Dropped())
	}
}
