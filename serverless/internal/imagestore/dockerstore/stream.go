package dockerstore

import (
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
)

// buildOutput is what a build's message stream said besides its lines of output.
type buildOutput struct {
	id      string // the image id (aux message)
	err     string // the build's error, if it failed
	readErr error
}

// message is one JSON message of Docker's build stream.
type message struct {
	Stream      string                    `json:"stream"`
	Status      string                    `json:"status"`
	Error       string                    `json:"error"`
	ErrorDetail *struct{ Message string } `json:"errorDetail"`
	Aux         json.RawMessage           `json:"aux"`
}

// ansi matches the colour escapes the classic builder puts around a step's standard error.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// readBuild decodes Docker's build stream, passing each non-blank output line to progress:
// messages split lines anywhere, so text is joined until its newline.
func readBuild(r io.Reader, progress func(string)) buildOutput {
	var out buildOutput
	dec := json.NewDecoder(r)
	var partial string
	emit := func(text string) {
		text = partial + text
		partial = ""
		for {
			i := strings.IndexByte(text, '\n')
			if i < 0 {
				partial = text
				return
			}
			line := strings.TrimRight(ansi.ReplaceAllString(text[:i], ""), "\r ")
			text = text[i+1:]
			if strings.TrimSpace(line) == "" {
				continue
			}
			if progress != nil {
				progress(line)
			}
		}
	}
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			if !errors.Is(err, io.EOF) {
				out.readErr = err
			}
			break
		}
		switch {
		case m.Error != "" || m.ErrorDetail != nil:
			out.err = m.Error
			if out.err == "" {
				out.err = m.ErrorDetail.Message
			}
		case len(m.Aux) > 0:
			var aux struct{ ID string }
			if json.Unmarshal(m.Aux, &aux) == nil && aux.ID != "" {
				out.id = aux.ID
			}
		case m.Stream != "":
			emit(m.Stream)
		case m.Status != "":
			emit(m.Status + "\n")
		}
	}
	if partial != "" {
		emit("\n")
	}
	return out
}
