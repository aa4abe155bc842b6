package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/kubectl/internal/mapper"
	"minik8s.io/kubectl/internal/policy"
	"minik8s.io/kubectl/internal/printer"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

func newAuth(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Inspect authorization",
	}
	cmd.AddCommand(newCanI(o), newWhoAmI(o))
	return cmd
}

// The verbs kubectl knows; others are checked all the same, with a warning.
var (
	knownResourceVerbs    = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "use", "bind", "impersonate", "*", "approve", "sign", "escalate", "attest"}
	knownNonResourceVerbs = []string{"get", "put", "post", "head", "options", "delete", "patch", "*"}
	// nonStandardResources are served for the impersonate verb but absent from discovery.
	nonStandardResources = []string{"users", "groups"}
)

type canIFlags struct {
	allNamespaces, quiet, list, noHeaders bool
	subresource                           string
}

// canIRequest is what `auth can-i` asks, once its arguments are resolved.
type canIRequest struct {
	verb, nonResourceURL, name string
	resource                   schema.GroupVersionResource
}

func newCanI(o *options) *cobra.Command {
	var f canIFlags
	cmd := &cobra.Command{
		Use:   "can-i VERB [TYPE | TYPE/NAME | NONRESOURCEURL]",
		Short: "Check whether an action is allowed",
		Long: "Check whether an action is allowed.\n\n" +
			"VERB is a logical Kubernetes API verb like 'get', 'list', 'watch', 'delete', etc. TYPE is a Kubernetes resource; " +
			"shortcuts and groups are resolved. NONRESOURCEURL is a partial URL that starts with \"/\". NAME is the name of a " +
			"particular Kubernetes resource. The answer is yes (exit 0) or no (exit 1). This command pairs nicely with impersonation: see --as.",
		Example: "  kubectl auth can-i create pods --all-namespaces\n" +
			"  kubectl auth can-i list deployments.apps\n" +
			"  kubectl auth can-i list pods --as=system:serviceaccount:dev:foo -n prod\n" +
			"  kubectl auth can-i get pods --subresource=log\n" +
			"  kubectl auth can-i get /logs/\n" +
			"  kubectl auth can-i --list --namespace=foo",
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.canI(cmd.Context(), f, args)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "If true, check the specified action in all namespaces.")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "If true, suppress output and just return the exit code.")
	fl.StringVar(&f.subresource, "subresource", "", "SubResource such as pod/log or deployment/scale")
	fl.BoolVar(&f.list, "list", false, "If true, prints all allowed actions.")
	fl.BoolVar(&f.noHeaders, "no-headers", false, "If true, prints allowed actions without headers")
	return cmd
}

// warn prints a warning as kubectl's warning printer does.
func (o *options) warn(msg string) { fmt.Fprintf(o.ErrOut, "Warning: %s\n", msg) }

func (o *options) canI(ctx context.Context, f canIFlags, args []string) error {
	out := o.Out
	var req canIRequest
	if f.list {
		if len(args) != 0 {
			return errors.New("list option must be specified with no arguments")
		}
	} else {
		if f.quiet {
			out = io.Discard
		}
		if len(args) != 2 {
			return errors.New("you must specify two arguments: verb resource or verb resource/resourceName.\nSee 'kubectl auth can-i -h' for help and examples.")
		}
		req.verb = args[0]
	}
	cl, err := o.client()
	if err != nil {
		return err
	}
	var m *mapper.Mapper
	if !f.list {
		if strings.HasPrefix(args[1], "/") {
			req.nonResourceURL = args[1]
		} else {
			if m, err = o.discover(ctx, cl); err != nil {
				return err
			}
			typ, name, _ := strings.Cut(args[1], "/")
			req.resource, req.name = o.canIResource(m, typ), name
		}
	}
	ns := ""
	if !f.allNamespaces {
		ns = o.ns()
	}
	if err := o.validateCanI(f, req, m); err != nil {
		return err
	}
	if f.list {
		return o.canIList(ctx, cl, ns, f.noHeaders)
	}
	sar := &authorizationv1.SelfSubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SelfSubjectAccessReview"},
	}
	if req.nonResourceURL != "" {
		sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: req.verb, Path: req.nonResourceURL}
	} else {
		sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: req.verb, Group: req.resource.Group, Resource: req.resource.Resource,
			Subresource: f.subresource, Name: req.name,
		}
	}
	var resp authorizationv1.SelfSubjectAccessReview
	if err := cl.Post().AbsPath("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews").Body(sar).Into(ctx, &resp); err != nil {
		return err
	}
	if resp.Status.Allowed {
		fmt.Fprintln(out, "yes")
		return nil
	}
	answer := "no"
	if resp.Status.Reason != "" {
		answer += " - " + resp.Status.Reason
	}
	if resp.Status.EvaluationError != "" {
		answer += " - " + resp.Status.EvaluationError
	}
	fmt.Fprintln(out, answer)
	// "no" is the answer, not a failure: exit 1 with nothing more said.
	return errReported
}

// canIResource resolves TYPE as kubectl does. One the server does not serve is still asked
// about, as typed, after a warning: the authorizer may know it (users and groups, say).
func (o *options) canIResource(m *mapper.Mapper, typ string) schema.GroupVersionResource {
	if typ == "*" {
		return schema.GroupVersionResource{Resource: typ}
	}
	full, gr := schema.ParseResourceArg(strings.ToLower(typ))
	if full != nil {
		if gvr, err := m.ResourceFor(*full); err == nil {
			return gvr
		}
	}
	gvr, err := m.ResourceFor(gr.WithVersion(""))
	if err == nil {
		return gvr
	}
	if !slices.Contains(nonStandardResources, gr.String()) {
		if gr.Group == "" {
			o.warn(fmt.Sprintf("the server doesn't have a resource type '%s'\n", gr.Resource))
		} else {
			o.warn(fmt.Sprintf("the server doesn't have a resource type '%s' in group '%s'\n", gr.Resource, gr.Group))
		}
	}
	return schema.GroupVersionResource{Resource: typ}
}

func (o *options) validateCanI(f canIFlags, req canIRequest, m *mapper.Mapper) error {
	if f.list {
		if f.quiet || f.allNamespaces || f.subresource != "" {
			return errors.New("list option can't be specified with neither quiet, all-namespaces nor subresource options")
		}
		return nil
	}
	switch {
	case req.nonResourceURL != "":
		if f.subresource != "" {
			return errors.New("--subresource can not be used with NonResourceURL")
		}
		if !slices.Contains(knownNonResourceVerbs, req.verb) {
			o.warn(fmt.Sprintf("verb '%s' is not a known verb\n", req.verb))
		}
	case !req.resource.Empty() && !f.allNamespaces:
		if namespaced, ok := m.Namespaced(req.resource); ok && !namespaced {
			if req.resource.Group == "" {
				o.warn(fmt.Sprintf("resource '%s' is not namespace scoped\n", req.resource.Resource))
			} else {
				o.warn(fmt.Sprintf("resource '%s' is not namespace scoped in group '%s'\n", req.resource.Resource, req.resource.Group))
			}
		}
		if !slices.Contains(knownResourceVerbs, req.verb) {
			o.warn(fmt.Sprintf("verb '%s' is not a known verb\n", req.verb))
		}
	}
	if f.noHeaders {
		return errors.New("--no-headers cannot be set without --list specified")
	}
	return nil
}

// canIList prints the rules a SelfSubjectRulesReview finds for the caller in ns.
func (o *options) canIList(ctx context.Context, cl *client.Client, ns string, noHeaders bool) error {
	review := &authorizationv1.SelfSubjectRulesReview{
		TypeMeta: metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SelfSubjectRulesReview"},
		Spec:     authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns},
	}
	var resp authorizationv1.SelfSubjectRulesReview
	if err := cl.Post().AbsPath("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews").Body(review).Into(ctx, &resp); err != nil {
		return err
	}
	if resp.Status.Incomplete {
		o.warn("the list may be incomplete: " + resp.Status.EvaluationError)
	}
	var lines [][]string
	if !noHeaders {
		lines = append(lines, policy.Header)
	}
	for _, r := range policy.ForDisplay(policy.FromRulesReview(resp.Status)) {
		lines = append(lines, policy.Row(r))
	}
	return printer.NewAligner(o.Out).Print(lines...)
}

// discover reads the server's discovery documents into a mapper: the core group first, then
// each group in the order /apis lists them, its preferred version first. A group version that
// does not answer is left out, as kubectl leaves out what partial discovery misses.
func (o *options) discover(ctx context.Context, cl *client.Client) (*mapper.Mapper, error) {
	core, err := cl.ServerResources(ctx, "v1")
	if err != nil {
		return nil, err
	}
	lists := []*metav1.APIResourceList{core}
	groups, err := cl.ServerGroups(ctx)
	if err != nil {
		return nil, err
	}
	for _, g := range groups.Groups {
		versions := []string{g.PreferredVersion.GroupVersion}
		for _, v := range g.Versions {
			if v.GroupVersion != g.PreferredVersion.GroupVersion {
				versions = append(versions, v.GroupVersion)
			}
		}
		for _, gv := range versions {
			if gv == "" {
				continue
			}
			l, err := cl.ServerResources(ctx, gv)
			if err != nil {
				continue
			}
			lists = append(lists, l)
		}
	}
	return mapper.New(lists), nil
}

func newWhoAmI(o *options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Check self subject attributes",
		Long: "Check who you are and your attributes (groups, extra), as the apiserver authenticated you: " +
			"helpful with impersonation (--as) and ServiceAccount tokens.",
		Example: "  kubectl auth whoami\n  kubectl auth whoami -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateObjectOutput(output); err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			review := &authenticationv1.SelfSubjectReview{
				TypeMeta: metav1.TypeMeta{APIVersion: authenticationv1.SchemeGroupVersion.String(), Kind: "SelfSubjectReview"},
			}
			var resp authenticationv1.SelfSubjectReview
			err = cl.Post().AbsPath("/apis/authentication.k8s.io/v1/selfsubjectreviews").Body(review).Into(cmd.Context(), &resp)
			switch {
			case errors.Is(err, apierror.ErrForbidden):
				return errors.New("the selfsubjectreviews API is not enabled in the cluster or you do not have permission to call it")
			case errors.Is(err, apierror.ErrNotFound):
				return errors.New("the selfsubjectreviews API is not enabled in the cluster\n" +
					"enable APISelfSubjectReview feature gate and authentication.k8s.io/v1alpha1 or authentication.k8s.io/v1beta1 API")
			case err != nil:
				return err
			}
			if output != "" {
				return o.printObject(output, &resp, "")
			}
			return printUserInfo(o.Out, resp.Status.UserInfo)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format. One of: (json, yaml, name).")
	return cmd
}

// printUserInfo prints the ATTRIBUTE/VALUE table of `auth whoami`.
func printUserInfo(w io.Writer, ui authenticationv1.UserInfo) error {
	lines := [][]string{{"ATTRIBUTE", "VALUE"}}
	if ui.Username != "" {
		lines = append(lines, []string{"Username", ui.Username})
	}
	if ui.UID != "" {
		lines = append(lines, []string{"UID", ui.UID})
	}
	if len(ui.Groups) > 0 {
		lines = append(lines, []string{"Groups", fmt.Sprint(ui.Groups)})
	}
	keys := make([]string, 0, len(ui.Extra))
	for k := range ui.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lines = append(lines, []string{"Extra: " + k, fmt.Sprint([]string(ui.Extra[k]))})
	}
	return printer.NewAligner(w).Print(lines...)
}
