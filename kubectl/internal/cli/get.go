package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/jsonpath"

	"minik8s.io/kubectl/internal/printer"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// target is one resource type of a command line with the names asked for (none means all).
type target struct {
	res   *scheme.Resource
	names []string
}

// parseTargets reads "TYPE[,TYPE] [NAME...]" or "TYPE/NAME ..." as kubectl does; the "all"
// category expands to its members, built-in and discovered.
func (o *options) parseTargets(ctx context.Context, args []string) ([]target, error) {
	if len(args) == 0 {
		return nil, errors.New("you must specify the type of resource to get")
	}
	if strings.Contains(args[0], "/") {
		var out []target
		for _, a := range args {
			typ, name, ok := strings.Cut(a, "/")
			if !ok || name == "" {
				return nil, fmt.Errorf("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'kubectl get resource/<resource_name>' instead of 'kubectl get resource resource/<resource_name>'")
			}
			res, err := o.resolver().resource(ctx, typ)
			if err != nil {
				return nil, err
			}
			if n := len(out); n > 0 && out[n-1].res.GVR() == res.GVR() {
				out[n-1].names = append(out[n-1].names, name)
				continue
			}
			out = append(out, target{res: res, names: []string{name}})
		}
		return out, nil
	}
	var out []target
	for _, typ := range strings.Split(args[0], ",") {
		if typ == "all" {
			members, err := o.resolver().category(ctx, typ)
			if err != nil {
				return nil, err
			}
			for _, r := range members {
				out = append(out, target{res: r})
			}
			continue
		}
		res, err := o.resolver().resource(ctx, typ)
		if err != nil {
			return nil, err
		}
		out = append(out, target{res: res, names: args[1:]})
	}
	if len(out) > 1 {
		for _, t := range out {
			if len(t.names) > 0 {
				return nil, errors.New("arguments in resource/name form must have a single resource and name")
			}
		}
	}
	return out, nil
}

type getFlags struct {
	output, selector, fieldSelector string
	allNamespaces, watch            bool
	showLabels, noHeaders           bool
	// raw is a path to GET and print as the server answers, instead of resources.
	raw string
	// template and jsonPath are -o jsonpath's; output is then "jsonpath".
	template string
	jsonPath *jsonpath.JSONPath
}

// parseOutput checks -o and, for jsonpath=TEMPLATE or jsonpath-file=FILE, reads and parses the
// template, so a bad one fails before any request.
func (g *getFlags) parseOutput() error {
	format, arg, hasArg := strings.Cut(g.output, "=")
	switch format {
	case "", "wide", "yaml", "json", "name":
		if !hasArg {
			return nil
		}
	case "jsonpath", "jsonpath-file":
		if !hasArg || arg == "" {
			return errors.New("template format specified but no template given")
		}
		g.template = arg
		if format == "jsonpath-file" {
			data, err := os.ReadFile(arg)
			if err != nil {
				return fmt.Errorf("error reading --template %s, %w", arg, err)
			}
			g.template = string(data)
		}
		jp, err := printer.ParseJSONPath(g.template)
		if err != nil {
			return err
		}
		g.output, g.jsonPath = "jsonpath", jp
		return nil
	}
	return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: json,jsonpath,jsonpath-file,name,wide,yaml", g.output)
}

func newGet(o *options) *cobra.Command {
	var g getFlags
	cmd := &cobra.Command{
		Use:   "get TYPE[.VERSION][.GROUP] [NAME | -l label] | TYPE[.VERSION][.GROUP]/NAME ...",
		Short: "Display one or many resources",
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.raw != "" {
				if len(args) > 0 {
					return errors.New("arguments may not be passed when --raw is specified")
				}
				return o.getRaw(cmd.Context(), cmd.OutOrStdout(), g.raw)
			}
			targets, err := o.parseTargets(cmd.Context(), args)
			if err != nil {
				return err
			}
			if err := g.parseOutput(); err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			if g.watch {
				if len(targets) != 1 {
					return errors.New("you may only specify a single resource type")
				}
				return o.watchTable(cmd.Context(), cl, targets[0], g)
			}
			switch g.output {
			case "yaml", "json", "name", "jsonpath":
				return o.getObjects(cmd.Context(), cl, targets, g)
			}
			return o.getTables(cmd.Context(), cl, targets, g)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&g.output, "output", "o", "", "Output format. One of: (json, yaml, name, wide, jsonpath=TEMPLATE, jsonpath-file=FILE).")
	f.StringVarP(&g.selector, "selector", "l", "", "Selector (label query) to filter on, supports '=', '==', '!=', 'in', 'notin'.")
	f.StringVar(&g.fieldSelector, "field-selector", "", "Selector (field query) to filter on, supports '=', '==', and '!='.")
	f.BoolVarP(&g.allNamespaces, "all-namespaces", "A", false, "If present, list the requested object(s) across all namespaces.")
	f.BoolVarP(&g.watch, "watch", "w", false, "After listing/getting the requested object, watch for changes.")
	f.BoolVar(&g.showLabels, "show-labels", false, "When printing, show all labels as the last column.")
	f.BoolVar(&g.noHeaders, "no-headers", false, "When using the default or custom-column output format, don't print headers.")
	f.StringVar(&g.raw, "raw", "", "Raw URI to request from the server.  Uses the transport specified by the kubeconfig file.")
	return cmd
}

// getRaw writes what the server answers to a GET of the path (with its query), as it comes.
func (o *options) getRaw(ctx context.Context, out io.Writer, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	cl, err := o.client()
	if err != nil {
		return err
	}
	body, err := cl.Get().AbsPath(u.Path).Params(u.Query()).Accept("*/*").Stream(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(out, body)
	return err
}

func (g getFlags) listOptions() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: g.selector, FieldSelector: g.fieldSelector}
}

// requestNS is the namespace a request goes to: empty for -A and cluster-scoped resources.
func (o *options) requestNS(res *scheme.Resource, all bool) string {
	if !res.Namespaced || all {
		return ""
	}
	return o.ns()
}

func (o *options) getTables(ctx context.Context, cl *client.Client, targets []target, g getFlags) error {
	failed, printed := false, 0
	for _, t := range targets {
		ns := o.requestNS(t.res, g.allNamespaces && len(t.names) == 0)
		var table *metav1.Table
		if len(t.names) == 0 {
			tb, err := cl.ListTable(ctx, t.res, ns, g.listOptions())
			if err != nil {
				return err
			}
			table = tb
		} else {
			for _, name := range t.names {
				tb, err := cl.GetTable(ctx, t.res, ns, name)
				if err != nil {
					fmt.Fprintln(o.ErrOut, FormatError(err))
					failed = true
					continue
				}
				if table == nil {
					table = tb
				} else {
					table.Rows = append(table.Rows, tb.Rows...)
				}
			}
		}
		if table == nil || len(table.Rows) == 0 {
			continue
		}
		opts := printer.TableOptions{
			Wide: g.output == "wide", WithNamespace: g.allNamespaces && t.res.Namespaced,
			ShowLabels: g.showLabels, NoHeaders: g.noHeaders,
		}
		if len(targets) > 1 {
			opts.NamePrefix = printer.KindName(t.res.GVK) + "/"
		}
		if printed > 0 {
			fmt.Fprintln(o.Out)
		}
		if err := printer.PrintTable(o.Out, table, opts); err != nil {
			return err
		}
		printed++
	}
	if printed == 0 && !failed {
		o.noResources(targets, g.allNamespaces)
	}
	if failed {
		return errReported
	}
	return nil
}

func (o *options) noResources(targets []target, all bool) {
	if all || !targets[0].res.Namespaced {
		fmt.Fprintln(o.ErrOut, "No resources found")
		return
	}
	fmt.Fprintf(o.ErrOut, "No resources found in %s namespace.\n", o.ns())
}

func (o *options) getObjects(ctx context.Context, cl *client.Client, targets []target, g getFlags) error {
	var objs []*unstructured.Unstructured
	failed := false
	single := len(targets) == 1 && len(targets[0].names) == 1
	for _, t := range targets {
		dyn := client.Dynamic(cl, t.res)
		ns := o.requestNS(t.res, g.allNamespaces && len(t.names) == 0)
		if len(t.names) == 0 {
			l, err := dyn.List(ctx, ns, g.listOptions())
			if err != nil {
				return err
			}
			for i := range l.Items {
				objs = append(objs, &l.Items[i])
			}
			continue
		}
		for _, name := range t.names {
			obj, err := dyn.Get(ctx, ns, name, metav1.GetOptions{})
			if err != nil {
				fmt.Fprintln(o.ErrOut, FormatError(err))
				failed = true
				continue
			}
			objs = append(objs, obj)
		}
	}
	if g.output == "name" {
		for _, obj := range objs {
			fmt.Fprintf(o.Out, "%s/%s\n", printer.KindName(obj.GroupVersionKind()), obj.GetName())
		}
	} else if g.output == "jsonpath" {
		if len(objs) > 0 || !single {
			if err := printer.JSONPath(o.Out, g.jsonPath, g.template, objs, single); err != nil {
				return err
			}
		}
	} else if len(objs) > 0 || !single {
		if err := printer.Objects(o.Out, g.output, objs, single); err != nil {
			return err
		}
	}
	if failed {
		return errReported
	}
	return nil
}

// watchTable lists, prints, then prints a row for every change, aligned with what came before.
func (o *options) watchTable(ctx context.Context, cl *client.Client, t target, g getFlags) error {
	ns := o.requestNS(t.res, g.allNamespaces)
	lo := g.listOptions()
	if len(t.names) == 1 {
		lo.FieldSelector = "metadata.name=" + t.names[0]
	} else if len(t.names) > 1 {
		return errors.New("watch is only supported on individual resources and resource collections, but 2 resources were found")
	}
	table, err := cl.ListTable(ctx, t.res, ns, lo)
	if err != nil {
		return err
	}
	opts := printer.TableOptions{Wide: g.output == "wide", WithNamespace: g.allNamespaces && t.res.Namespaced, ShowLabels: g.showLabels, NoHeaders: g.noHeaders}
	al := printer.NewAligner(o.Out)
	header, rows := printer.Rows(table, opts)
	if len(rows) == 0 {
		o.noResources([]target{t}, g.allNamespaces)
	} else if err := al.Print(append([][]string{header}, rows...)...); err != nil {
		return err
	}
	lo.ResourceVersion = table.ResourceVersion
	w, err := cl.WatchTable(ctx, t.res, ns, lo)
	if err != nil {
		return err
	}
	defer w.Stop()
	columns := table.ColumnDefinitions
	headerDone := len(rows) > 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			if ev.Type == watch.Error {
				if st, ok := ev.Object.(*metav1.Status); ok {
					return fmt.Errorf("watch: %s", st.Message)
				}
				return errors.New("watch failed")
			}
			tb, ok := ev.Object.(*metav1.Table)
			if !ok || ev.Type == watch.Bookmark {
				continue
			}
			// Only the first event of a watch may carry the columns.
			if len(tb.ColumnDefinitions) == 0 {
				tb.ColumnDefinitions = columns
			}
			h, rows := printer.Rows(tb, opts)
			if !headerDone && h != nil {
				rows = append([][]string{h}, rows...)
				headerDone = true
			}
			if err := al.Print(rows...); err != nil {
				return err
			}
		}
	}
}
