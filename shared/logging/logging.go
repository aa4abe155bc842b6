package logging

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Fixed attribute keys. Use these rather than ad hoc spellings so logs from every component can
// be searched the same way.
const (
	KeyComponent = "component"
	KeyPod       = "pod"
	KeyNode      = "node"
	KeyKey       = "key"
	KeyErr       = "err"
	KeyNamespace = "namespace"
	KeyName      = "name"
	KeyResource  = "resource"
)

// Formats.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// New returns a logger writing to w at level ("debug", "info", "warn", "error") in format
// ("text" or "json") with the component attribute on every line. Bad values fall back to info
// and text, and the logger says so on its first line; validate flags with Options.Validate
// to reject them instead.
func New(component, level, format string, w io.Writer) *slog.Logger {
	lvl, levelErr := ParseLevel(level)
	formatErr := checkFormat(format)
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	if formatErr == nil && strings.EqualFold(format, FormatJSON) {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	logger := slog.New(h).With(KeyComponent, component)
	if err := errors.Join(levelErr, formatErr); err != nil {
		logger.Warn("bad logging options, using defaults", KeyErr, err)
	}
	return logger
}

// ParseLevel reads a level name; the empty string is info.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return slog.LevelInfo, fmt.Errorf("log level %q: want debug, info, warn or error", s)
}

func checkFormat(s string) error {
	switch strings.ToLower(s) {
	case "", FormatText, FormatJSON:
		return nil
	}
	return fmt.Errorf("log format %q: want text or json", s)
}

// Err is the err attribute; a nil error is logged as such rather than dropped.
func Err(err error) slog.Attr {
	if err == nil {
		return slog.String(KeyErr, "<nil>")
	}
	return slog.String(KeyErr, err.Error())
}

// FlagSet is the part of flag.FlagSet (and spf13/pflag's FlagSet) that AddFlags needs.
type FlagSet interface {
	StringVar(p *string, name, value, usage string)
}

// Options are the logging flags of a binary.
type Options struct {
	Level  string
	Format string
}

// AddFlags registers --log-level and --log-format.
func (o *Options) AddFlags(fs FlagSet) {
	fs.StringVar(&o.Level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.Format, "log-format", FormatText, "log format: text or json")
}

// Validate rejects unknown levels and formats.
func (o Options) Validate() error {
	_, levelErr := ParseLevel(o.Level)
	return errors.Join(levelErr, checkFormat(o.Format))
}

// Logger is New with these options.
func (o Options) Logger(component string, w io.Writer) *slog.Logger {
	return New(component, o.Level, o.Format, w)
}
