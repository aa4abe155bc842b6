package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/scheme"
)

// maxInvokeAnswer bounds what execute reads of an answer.
const maxInvokeAnswer = 64 << 20

// invokeKinds are the words execute takes before the name, by the resource they call.
var invokeKinds = map[string]string{
	"function": "functions", "functions": "functions", "fn": "functions",
	"workflow": "workflows", "workflows": "workflows", "wf": "workflows",
}

// executeRequest is a parsed command line of kubectl execute.
type executeRequest struct {
	resource  string // functions or workflows
	namespace string // empty: -n or the context's
	name      string
	data      string // the argument; "-" reads stdin; empty: -f or {}
}

// parseExecuteArgs reads [function|workflow] [<namespace>/]<name> [<json>|-].
func parseExecuteArgs(args []string) (executeRequest, error) {
	r := executeRequest{resource: "functions"}
	if len(args) >= 2 {
		if res, ok := invokeKinds[args[0]]; ok {
			r.resource, args = res, args[1:]
		}
	}
	if len(args) == 0 || len(args) > 2 {
		return r, errors.New("want [function|workflow] [NAMESPACE/]NAME ['JSON' | -]")
	}
	ref := args[0]
	if ns, name, ok := strings.Cut(ref, "/"); ok {
		r.namespace, ref = ns, name
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return r, fmt.Errorf("invalid namespace %q: %s", ns, strings.Join(errs, "; "))
		}
	}
	if errs := validation.IsDNS1123Subdomain(ref); len(errs) > 0 {
		return r, fmt.Errorf("invalid %s name %q: %s", strings.TrimSuffix(r.resource, "s"), ref, strings.Join(errs, "; "))
	}
	r.name = ref
	if len(args) == 2 {
		r.data = args[1]
	}
	return r, nil
}

// executeData is the JSON to send: the argument, stdin ("-" as the argument or the file), a
// file, or {} when none is given. It must be JSON, so a typo is caught before any call.
func executeData(arg, file string, stdin io.Reader) ([]byte, error) {
	var data []byte
	var err error
	from := "the data"
	switch {
	case arg != "" && file != "":
		return nil, errors.New("give the data as an argument or with -f, not both")
	case arg == "-" || file == "-":
		from = "stdin"
		data, err = io.ReadAll(io.LimitReader(stdin, maxInvokeAnswer))
	case file != "":
		from = file
		data, err = os.ReadFile(file)
	case arg != "":
		data = []byte(arg)
	default:
		return []byte("{}"), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", from, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s is empty: want JSON, e.g. '{}'", from)
	}
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		return nil, fmt.Errorf("%s is not JSON: %v", from, err)
	}
	return data, nil
}

func newExecute(o *options) *cobra.Command {
	var file string
	var pretty, servedBy bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "execute [function|workflow] [NAMESPACE/]NAME ['JSON' | -]",
		Short: "Call a function or run a workflow with JSON input and print its JSON result",
		Long: `Call a serverless function (the default) or run a workflow through the apiserver's invoke
subresource, with the JSON given as an argument, read from a file (-f) or from stdin (-), or {}
when none is given. The result is printed on stdout; an error prints the status code and the
gateway's message (a handler's exception with its traceback) and exits 1.`,
		Example: `  kubectl execute default/add '{"a": 1, "b": 2}'
  kubectl execute function add -n default '{"a": 1, "b": 2}'
  kubectl execute workflow default/pipeline -f input.json
  echo '{"text": "hi"}' | kubectl execute wf pipeline -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := parseExecuteArgs(args)
			if err != nil {
				return usageError(cmd, "%v", err)
			}
			data, err := executeData(req.data, file, o.In)
			if err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			if req.namespace == "" {
				req.namespace = o.ns()
			} else if o.namespace != "" && o.namespace != req.namespace {
				return fmt.Errorf("the namespace of %s/%s does not match the namespace %q given with -n", req.namespace, req.name, o.namespace)
			}
			res, err := lookup(req.resource)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			resp, err := cl.Post().Resource(res, req.namespace, req.name, "invoke").Body(data).Raw(ctx)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			answer, err := io.ReadAll(io.LimitReader(resp.Body, maxInvokeAnswer))
			if err != nil {
				return fmt.Errorf("read the answer of %s %s/%s: %w", strings.TrimSuffix(req.resource, "s"), req.namespace, req.name, err)
			}
			if servedBy {
				if by := resp.Header.Get(serverlessv1.HeaderServedBy); by != "" {
					fmt.Fprintf(o.ErrOut, "served by %s\n", by)
				}
			}
			if resp.StatusCode < 200 || resp.StatusCode > 299 {
				fmt.Fprint(o.ErrOut, invokeFailure(res, req.namespace, req.name, resp.StatusCode, answer))
				return errReported
			}
			if pretty {
				var buf bytes.Buffer
				if json.Indent(&buf, answer, "", "  ") == nil {
					answer = buf.Bytes()
				}
			}
			answer = bytes.TrimRight(answer, "\n")
			_, err = fmt.Fprintf(o.Out, "%s\n", answer)
			return err
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "File with the JSON input ('-' for stdin)")
	cmd.Flags().BoolVar(&pretty, "pretty", false, "Indent the JSON result")
	cmd.Flags().BoolVar(&servedBy, "served-by", false, "Print the pod that answered on stderr")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "Give up after this long (0: as long as the gateway allows the call)")
	return cmd
}

// invokeFailure words a refused call: which object, the status code, and the message of the
// apiserver (a Status) or the gateway (an error with a handler's traceback, or plain text).
func invokeFailure(res *scheme.Resource, ns, name string, code int, body []byte) string {
	msg, detail := strings.TrimSpace(string(body)), ""
	var st metav1.Status
	var rerr serverlessv1.RuntimeError
	switch {
	case json.Unmarshal(body, &st) == nil && st.Kind == "Status":
		// The apiserver words a gateway's refusal as "<kind> <ns>/<name>: <error>", with a
		// handler's traceback on the lines after.
		msg = strings.TrimPrefix(st.Message, fmt.Sprintf("%s %s/%s: ", strings.TrimSuffix(res.Plural, "s"), ns, name))
		if first, rest, ok := strings.Cut(msg, "\n"); ok {
			msg, detail = first, strings.TrimRight(rest, "\n")
		}
	case json.Unmarshal(body, &rerr) == nil && rerr.Error != "":
		msg, detail = rerr.Error, strings.TrimRight(rerr.Traceback, "\n")
	}
	if msg == "" {
		msg = http.StatusText(code)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "error: %s %s/%s: %d %s: %s\n", strings.TrimSuffix(res.Plural, "s"), ns, name, code, http.StatusText(code), msg)
	if detail != "" {
		b.WriteString(detail + "\n")
	}
	return b.String()
}
