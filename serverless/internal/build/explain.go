package build

import (
	"fmt"
	"strings"
)

// Explain turns a failed build's error and output lines into a message that says what went
// wrong in the user's terms: pip's own error when installing the requirements failed (and that
// no package index answered, when that is why), Python's when the source does not compile, a
// missing runtime base.
func Explain(dockerErr string, lines []string) string {
	dockerErr = strings.TrimSpace(dockerErr)
	step := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "Step ") {
			step = l
		}
	}
	switch {
	case strings.Contains(step, "pip install"):
		pipErr := lastWith(lines, "ERROR: ")
		if pipErr == "" {
			pipErr = dockerErr
		}
		if why := unreachable(lines); why != "" {
			return fmt.Sprintf("installing requirements with pip failed: no package index answered (%s): %s", why, pipErr)
		}
		return fmt.Sprintf("installing requirements with pip failed: %s", pipErr)
	case strings.Contains(step, "compileall"):
		if msg := compileError(lines); msg != "" {
			return "the source does not compile: " + msg
		}
		return "the source does not compile: " + dockerErr
	case strings.Contains(dockerErr, "pull access denied") || strings.Contains(dockerErr, "No such image") ||
		(strings.HasPrefix(step, "Step 1/") && strings.Contains(step, "FROM")):
		return fmt.Sprintf("the runtime base image is missing (make images builds minik8s/python-runtime): %s", dockerErr)
	}
	return dockerErr
}

func lastWith(lines []string, prefix string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// unreachable says why pip could not reach an index at all ("Name or service not known"), or
// returns "" when it reached one.
func unreachable(lines []string) string {
	for _, l := range lines {
		if _, after, ok := strings.Cut(l, "Failed to establish a new connection: "); ok {
			why, _, _ := strings.Cut(after, "')")
			if _, msg, ok := strings.Cut(why, "] "); ok && strings.HasPrefix(why, "[Errno") {
				why = msg
			}
			return why
		}
		for _, s := range []string{"Temporary failure in name resolution", "Name or service not known",
			"Network is unreachable", "Connection refused", "ConnectTimeoutError", "ProxyError"} {
			if strings.Contains(l, s) {
				return s
			}
		}
	}
	return ""
}

// compileError finds compileall's report of a file that does not compile, as
// "main.py line 3: SyntaxError: invalid syntax".
func compileError(lines []string) string {
	file, line := "", ""
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(t, "*** Error compiling '"); ok {
			file, _, _ = strings.Cut(rest, "'")
			file, line = strings.TrimPrefix(file, "/function/"), ""
			continue
		}
		if file == "" {
			continue
		}
		if _, after, ok := strings.Cut(t, "\", line "); ok && strings.HasPrefix(t, "File ") {
			line = " line " + after
			continue
		}
		if typ, _, ok := strings.Cut(t, ": "); ok && strings.HasSuffix(typ, "Error") && !strings.Contains(typ, " ") {
			return file + line + ": " + t
		}
	}
	return ""
}
