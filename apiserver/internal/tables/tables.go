package tables

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	"minik8s.io/shared/scheme"
)

// Options mirror the parts of metav1.TableOptions and the Accept header the server honours.
type Options struct {
	// Wide is accepted for symmetry with kubectl but changes nothing: like Kubernetes, the
	// server always returns every column and marks the -o wide ones with Priority 1, so the
	// client decides what to show.
	Wide bool
	// IncludeObject says what each row's Object carries; empty means Metadata, as in
	// Kubernetes.
	IncludeObject metav1.IncludeObjectPolicy
	// NoHeaders drops the column definitions (kubectl asks for this when it only needs rows).
	NoHeaders bool
}

// Printer is the table layout of one kind: its columns and how to fill them for one object.
type Printer struct {
	Columns []metav1.TableColumnDefinition
	Row     func(obj runtime.Object, now time.Time) (metav1.TableRow, error)
}

// NewPrinter is the Printer of a kind whose rows row fills for one object of type T.
func NewPrinter[T runtime.Object](columns []metav1.TableColumnDefinition, row func(T, time.Time) metav1.TableRow) Printer {
	return Printer{Columns: columns, Row: func(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
		t, ok := obj.(T)
		if !ok {
			var want T
			return metav1.TableRow{}, fmt.Errorf("table row: got %T, want %T", obj, want)
		}
		return row(t, now), nil
	}}
}

// registered holds the Printer of each kind that registered one; other kinds get
// defaultPrinter.
var registered = struct {
	sync.RWMutex
	printers map[schema.GroupKind]Printer
}{printers: map[schema.GroupKind]Printer{}}

// Register makes p the layout of gk's tables in For. Each served kind's registration in the
// registry registers its Printer, when the program starts.
func Register(gk schema.GroupKind, p Printer) {
	registered.Lock()
	defer registered.Unlock()
	registered.printers[gk] = p
}

func printerOf(gk schema.GroupKind) Printer {
	registered.RLock()
	defer registered.RUnlock()
	if p, ok := registered.printers[gk]; ok {
		return p
	}
	return defaultPrinter
}

// For renders obj, a typed single object or list of scheme.Scheme, as a Table with the Printer
// its kind registered. now is the moment ages are measured from; passing it in keeps the
// output a pure function of its input.
func For(obj runtime.Object, opts Options, now time.Time) (*metav1.Table, error) {
	gvk, err := kindOf(obj)
	if err != nil {
		return nil, err
	}
	return printerOf(itemKind(obj, gvk).GroupKind()).render(obj, gvk, opts, now)
}

// Table renders obj, a single object or list of p's kind, as a Table; see For.
func (p Printer) Table(obj runtime.Object, opts Options, now time.Time) (*metav1.Table, error) {
	gvk, err := kindOf(obj)
	if err != nil {
		return nil, err
	}
	return p.render(obj, gvk, opts, now)
}

// itemKind is the kind of obj's items, if it is a list (gvk is obj's kind), else gvk.
func itemKind(obj runtime.Object, gvk schema.GroupVersionKind) schema.GroupVersionKind {
	if meta.IsListType(obj) {
		gvk.Kind = trimList(gvk.Kind)
	}
	return gvk
}

func (p Printer) render(obj runtime.Object, gvk schema.GroupVersionKind, opts Options, now time.Time) (*metav1.Table, error) {
	var items []runtime.Object
	isList := meta.IsListType(obj)
	if isList {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, fmt.Errorf("extract items of %s: %w", gvk.Kind, err)
		}
	} else {
		items = []runtime.Object{obj}
	}
	itemGVK := itemKind(obj, gvk)

	table := &metav1.Table{
		TypeMeta: metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "Table"},
		Rows:     make([]metav1.TableRow, 0, len(items)),
	}
	if !opts.NoHeaders {
		table.ColumnDefinitions = p.Columns
	}
	if isList {
		if l, err := meta.ListAccessor(obj); err == nil {
			table.ResourceVersion = l.GetResourceVersion()
			table.Continue = l.GetContinue()
			table.RemainingItemCount = l.GetRemainingItemCount()
		}
	} else if m, err := meta.Accessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}

	for _, item := range items {
		row, err := p.Row(item, now)
		if err != nil {
			return nil, err
		}
		if len(row.Cells) != len(p.Columns) {
			// A mismatch would make kubectl print garbage; fail loudly in tests instead.
			return nil, fmt.Errorf("table for %s: %d cells for %d columns", itemGVK.Kind, len(row.Cells), len(p.Columns))
		}
		if row.Object, err = rowObject(item, itemGVK, opts.IncludeObject); err != nil {
			return nil, err
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

// kindOf finds the kind of obj, from its TypeMeta if set, otherwise from the scheme (decoded
// items and lists usually carry no TypeMeta).
func kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	if obj == nil {
		return schema.GroupVersionKind{}, fmt.Errorf("table for nil object")
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
		return gvk, nil
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T: %w", obj, err)
	}
	return gvks[0], nil
}

func trimList(kind string) string {
	if len(kind) > 4 && kind[len(kind)-4:] == "List" {
		return kind[:len(kind)-4]
	}
	return kind
}

// rowObject builds what a row carries in Object, already encoded so the table marshals the
// same way whichever encoder the server uses (RawExtension marshals only Raw).
func rowObject(item runtime.Object, gvk schema.GroupVersionKind, policy metav1.IncludeObjectPolicy) (runtime.RawExtension, error) {
	switch policy {
	case metav1.IncludeNone:
		return runtime.RawExtension{}, nil
	case metav1.IncludeObject:
		obj := item.DeepCopyObject()
		if obj.GetObjectKind().GroupVersionKind().Empty() {
			obj.GetObjectKind().SetGroupVersionKind(gvk)
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			return runtime.RawExtension{}, fmt.Errorf("encode row object: %w", err)
		}
		return runtime.RawExtension{Raw: raw, Object: obj}, nil
	case "", metav1.IncludeMetadata:
		m, err := meta.Accessor(item)
		if err != nil {
			return runtime.RawExtension{}, fmt.Errorf("row metadata of %T: %w", item, err)
		}
		partial := meta.AsPartialObjectMetadata(m).DeepCopy()
		partial.TypeMeta = metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadata"}
		raw, err := json.Marshal(partial)
		if err != nil {
			return runtime.RawExtension{}, fmt.Errorf("encode row metadata: %w", err)
		}
		return runtime.RawExtension{Raw: raw, Object: partial}, nil
	default:
		return runtime.RawExtension{}, fmt.Errorf("unknown includeObject %q: %w", policy, ErrInvalidPolicy)
	}
}

// ErrInvalidPolicy is returned (wrapped) for an includeObject other than None, Metadata or
// Object; the server reports it as 400 Bad Request.
var ErrInvalidPolicy = errors.New("invalid includeObject")

// age prints how long ago ts was, as kubectl does; a zero time is "<unknown>".
func age(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

// defaultPrinter is what Kubernetes' default table convertor shows for kinds without printers.
var defaultPrinter = Printer{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]},
	},
	Row: func(obj runtime.Object, _ time.Time) (metav1.TableRow, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return metav1.TableRow{}, fmt.Errorf("table row of %T: %w", obj, err)
		}
		return metav1.TableRow{Cells: []any{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}}, nil
	},
}
