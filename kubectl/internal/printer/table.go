package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TableOptions chooses what a table shows.
type TableOptions struct {
	// Wide shows columns of priority above 0 (-o wide).
	Wide bool
	// WithNamespace adds a leading NAMESPACE column (-A).
	WithNamespace bool
	// ShowLabels adds a trailing LABELS column.
	ShowLabels bool
	NoHeaders  bool
	// NamePrefix is put before each name, e.g. "pod/" when several kinds are printed together.
	NamePrefix string
}

// padding between columns and the narrowest column, as in kubectl's tab writer.
const (
	padding  = 3
	minWidth = 6
)

// Rows turns a Table into printable lines: the header (unless NoHeaders) and one line of cells
// per row.
func Rows(t *metav1.Table, o TableOptions) (header []string, rows [][]string) {
	var cols []int
	for i, c := range t.ColumnDefinitions {
		if c.Priority == 0 || o.Wide {
			cols = append(cols, i)
		}
	}
	if o.WithNamespace {
		header = append(header, "NAMESPACE")
	}
	for _, i := range cols {
		header = append(header, strings.ToUpper(t.ColumnDefinitions[i].Name))
	}
	if o.ShowLabels {
		header = append(header, "LABELS")
	}
	for _, r := range t.Rows {
		var line []string
		meta := rowMeta(r)
		if o.WithNamespace {
			line = append(line, meta.Namespace)
		}
		for n, i := range cols {
			var cell any
			if i < len(r.Cells) {
				cell = r.Cells[i]
			}
			s := FormatCell(cell)
			if n == 0 && o.NamePrefix != "" {
				s = o.NamePrefix + s
			}
			line = append(line, s)
		}
		if o.ShowLabels {
			line = append(line, FormatLabels(meta.Labels))
		}
		rows = append(rows, line)
	}
	if o.NoHeaders {
		header = nil
	}
	return header, rows
}

// rowMeta reads the object metadata the server attaches to a row (includeObject=Metadata is
// the server's default); rows without it simply have no namespace or labels.
func rowMeta(r metav1.TableRow) metav1.ObjectMeta {
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if len(r.Object.Raw) > 0 {
		_ = json.Unmarshal(r.Object.Raw, &m)
	}
	return m.Metadata
}

// FormatCell prints a cell as kubectl does. JSON numbers arrive as float64; whole ones print
// without a decimal point.
func FormatCell(c any) string {
	switch v := c.(type) {
	case nil:
		return "<none>"
	case string:
		return v
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return fmt.Sprintf("%d", int64(v))
		}
		return fmt.Sprint(v)
	default:
		return fmt.Sprint(v)
	}
}

// FormatLabels prints labels as k=v pairs sorted by key, or <none>.
func FormatLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}

// Aligner prints lines in aligned columns. It remembers widths, so rows that arrive later (a
// watch) line up with those already printed as long as they are no wider.
type Aligner struct {
	w      io.Writer
	widths []int
}

// NewAligner prints to w.
func NewAligner(w io.Writer) *Aligner { return &Aligner{w: w} }

// Print writes lines, widening columns to fit all of them first.
func (a *Aligner) Print(lines ...[]string) error {
	for _, l := range lines {
		for i, c := range l {
			for len(a.widths) <= i {
				a.widths = append(a.widths, 0)
			}
			a.widths[i] = max(a.widths[i], utf8.RuneCountInString(c)+padding, minWidth)
		}
	}
	var b strings.Builder
	for _, l := range lines {
		for i, c := range l {
			b.WriteString(c)
			if i < len(l)-1 {
				b.WriteString(strings.Repeat(" ", a.widths[i]-utf8.RuneCountInString(c)))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(a.w, b.String())
	return err
}

// PrintTable prints t aligned.
func PrintTable(w io.Writer, t *metav1.Table, o TableOptions) error {
	header, rows := Rows(t, o)
	lines := rows
	if header != nil {
		lines = append([][]string{header}, rows...)
	}
	return NewAligner(w).Print(lines...)
}
