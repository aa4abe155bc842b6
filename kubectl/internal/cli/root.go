package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilexec "k8s.io/utils/exec"

	"minik8s.io/kubectl/internal/mapper"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// Version is our kubectl's version, set at build time with -ldflags -X.
var Version = "v1.32.0-minik8s"

// Streams are where a command reads and writes, so tests can capture them.
type Streams struct {
	In          io.Reader
	Out, ErrOut io.Writer
}

// options are the global flags and what they resolve to.
type options struct {
	Streams
	kubeconfig, context, namespace string
	server, token                  string
	insecure                       bool
	verbose                        int
	// as, asGroups and asUID are --as, --as-group and --as-uid: who every request acts as.
	as, asUID string
	asGroups  []string

	cl        *client.Client
	defaultNS string
	// res resolves resource types and kinds, built-in or discovered (resolver).
	res *resolver
}

// errReported means the command already printed its errors (kubectl goes on after a failed
// object and exits 1 at the end).
var errReported = errors.New("errors were reported")

// Main runs kubectl with args and returns the exit code.
func Main(ctx context.Context, args []string, s Streams) int {
	root := NewRoot(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	// An interrupted command says nothing more (kubectl dies with the signal).
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return 1
	}
	// A remote command's exit status becomes ours, with kubectl's line saying so.
	var exit utilexec.ExitError
	if errors.As(err, &exit) {
		fmt.Fprintln(s.ErrOut, err.Error())
		return exit.ExitStatus()
	}
	if !errors.Is(err, errReported) {
		fmt.Fprintln(s.ErrOut, FormatError(err))
	}
	return 1
}

// NewRoot builds the command tree.
func NewRoot(s Streams) *cobra.Command {
	o := &options{Streams: s}
	root := &cobra.Command{
		Use:           "kubectl",
		Short:         "kubectl controls the minik8s cluster manager",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetIn(s.In)
	f := root.PersistentFlags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file to use for CLI requests.")
	f.StringVar(&o.context, "context", "", "The name of the kubeconfig context to use")
	f.StringVarP(&o.namespace, "namespace", "n", "", "If present, the namespace scope for this CLI request")
	f.StringVarP(&o.server, "server", "s", "", "The address and port of the Kubernetes API server")
	f.StringVar(&o.token, "token", "", "Bearer token for authentication to the API server")
	f.BoolVar(&o.insecure, "insecure-skip-tls-verify", false, "If true, the server's certificate will not be checked for validity.")
	f.IntVarP(&o.verbose, "v", "v", 0, "number for the log level verbosity (any value above 0 logs requests)")
	f.StringVar(&o.as, "as", "", "Username to impersonate for the operation. User could be a regular user or a service account in a namespace.")
	f.StringArrayVar(&o.asGroups, "as-group", nil, "Group to impersonate for the operation, this flag can be repeated to specify multiple groups.")
	f.StringVar(&o.asUID, "as-uid", "", "UID to impersonate for the operation.")
	root.AddCommand(
		newApply(o), newCreate(o), newReplace(o), newGet(o), newDescribe(o), newDelete(o), newPatch(o),
		newLogs(o), newVersion(o), newAPIResources(o),
		newCordon(o), newUncordon(o), newDrain(o), newLabel(o),
		newExec(o), newAttach(o), newCp(o), newPortForward(o), newProxy(o), newDebug(o),
		newTop(o), newAutoscale(o),
		newRollout(o), newScale(o), newSet(o),
		newExecute(o), newAuth(o),
	)
	return root
}

// client connects lazily, so `kubectl version --client` and usage errors need no kubeconfig.
func (o *options) client() (*client.Client, error) {
	if o.cl != nil {
		return o.cl, nil
	}
	cfg, err := o.clientConfig()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	if o.verbose > 0 {
		cl = cl.WithLogger(slog.New(slog.NewTextHandler(o.ErrOut, &slog.HandlerOptions{Level: slog.LevelDebug})))
	}
	o.cl, o.defaultNS = cl, cfg.Namespace
	return cl, nil
}

// clientConfig resolves the kubeconfig (--kubeconfig, --context) and overlays --server,
// --token and --insecure-skip-tls-verify: the one place both our client and client-go's
// rest.Config (restconfig.go) get their connection from.
func (o *options) clientConfig() (*client.Config, error) {
	cfg := &client.Config{}
	loaded, err := client.FromKubeconfigContext(o.kubeconfig, o.context)
	switch {
	case err == nil:
		cfg = loaded
	case o.server == "" || o.kubeconfig != "" || !errors.Is(err, os.ErrNotExist):
		// A kubeconfig the user named, or one that exists but is broken, is always an error;
		// a missing default one is fine when --server says where to go.
		return nil, err
	}
	if o.server != "" {
		cfg.Server = o.server
	}
	if o.token != "" {
		cfg.Token = o.token
	}
	if o.insecure {
		cfg.Insecure = true
	}
	// As client-go's kubeconfig validation does: groups or a uid impersonate nobody alone.
	if o.as == "" && (len(o.asGroups) > 0 || o.asUID != "") {
		return nil, fmt.Errorf("requesting uid, groups or user-extra for %v without impersonating a user", cfg.AuthInfo)
	}
	cfg.Impersonate = client.Impersonation{UserName: o.as, UID: o.asUID, Groups: o.asGroups}
	cfg.UserAgent = "kubectl-minik8s/" + Version
	return cfg, nil
}

// ns is the namespace of the request: -n, else the kubeconfig context's, else default.
func (o *options) ns() string {
	switch {
	case o.namespace != "":
		return o.namespace
	case o.defaultNS != "":
		return o.defaultNS
	}
	return metav1.NamespaceDefault
}

// resolver resolves resource types and kinds through the scheme, then the server's discovery.
func (o *options) resolver() *resolver {
	if o.res == nil {
		o.res = &resolver{discover: func(ctx context.Context) (*mapper.Mapper, error) {
			cl, err := o.client()
			if err != nil {
				return nil, err
			}
			return o.discover(ctx, cl)
		}}
	}
	return o.res
}

// lookup resolves a built-in resource type as typed (pods, po, pod, deploy, deployment.apps,
// ...), for commands that only work on built-in kinds; others use resolver.
func lookup(name string) (*scheme.Resource, error) {
	r, err := scheme.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("the server doesn't have a resource type %q", name)
	}
	return r, nil
}

// usageError is kubectl's wording for a command line it cannot use.
func usageError(cmd *cobra.Command, format string, args ...any) error {
	return fmt.Errorf("%s\nSee '%s -h' for help and examples", fmt.Sprintf(format, args...), cmd.CommandPath())
}

// FormatError words an error as kubectl does, starting with the server's own message.
func FormatError(err error) string {
	// kubectl prints what its REST mapper cannot resolve without a prefix.
	var noMatch *mapper.NoMatchError
	if errors.As(err, &noMatch) {
		return noMatch.Error()
	}
	var ae *apierror.Error
	// client-go's Status errors (from a refused stream) read like ours.
	if st, ok := err.(apierrors.APIStatus); ok { //nolint:errorlint // kubectl looks at the error itself, not what it wraps
		status := st.Status()
		ae = apierror.FromStatus(&status)
	} else if !errors.As(err, &ae) {
		return "error: " + err.Error()
	}
	s := ae.Status
	switch {
	case s.Reason == metav1.StatusReasonInvalid && s.Details != nil:
		head := "The request is invalid"
		if s.Details.Kind != "" || s.Details.Name != "" {
			head = fmt.Sprintf("The %s %q is invalid", s.Details.Kind, s.Details.Name)
		}
		switch len(s.Details.Causes) {
		case 0:
			return head
		case 1:
			c := s.Details.Causes[0]
			return head + ": " + cause(c)
		}
		var b strings.Builder
		b.WriteString(head + ": ")
		for _, c := range s.Details.Causes {
			b.WriteString("\n* " + cause(c))
		}
		return b.String()
	case s.Reason == metav1.StatusReasonUnauthorized:
		return fmt.Sprintf("error: You must be logged in to the server (%s)", s.Message)
	case s.Reason != "":
		return fmt.Sprintf("Error from server (%s): %s", s.Reason, s.Message)
	}
	return "Error from server: " + s.Message
}

func cause(c metav1.StatusCause) string {
	if c.Field == "" {
		return c.Message
	}
	return c.Field + ": " + c.Message
}
