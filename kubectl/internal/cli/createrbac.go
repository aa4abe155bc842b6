package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/kubectl/internal/policy"
	"minik8s.io/shared/client"
)

// createFlags are the flags every `create <kind>` subcommand has.
type createFlags struct {
	output, dryRun, fieldManager string
}

func (c *createFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&c.output, "output", "o", "", "Output format. One of: (json, yaml, name).")
	f.StringVar(&c.dryRun, "dry-run", "none", `Must be "none", "server", or "client". If client strategy, only print the object that would be sent, without sending it. If server strategy, submit server-side request without persisting the resource.`)
	f.StringVar(&c.fieldManager, "field-manager", "kubectl-create", "Name of the manager used to track field ownership.")
}

func (c createFlags) validate() error {
	if err := dryRun(c.dryRun).validate(); err != nil {
		return err
	}
	return validateObjectOutput(c.output)
}

// nameArg is the NAME of a create subcommand, which must be the only argument.
func nameArg(cmd *cobra.Command, args []string) (string, error) {
	n := cmd.ArgsLenAtDash()
	if n == -1 {
		n = len(args)
	}
	if n != 1 {
		return "", usageError(cmd, "exactly one NAME is required, got %d", n)
	}
	return args[0], nil
}

// afterDash is the COMMAND given after "--", nil without one.
func afterDash(cmd *cobra.Command, args []string) []string {
	if n := cmd.ArgsLenAtDash(); n >= 0 {
		return args[n:]
	}
	return nil
}

// createAndPrint sends obj to the server, in namespace ns for a namespaced kind, unless the dry
// run is the client's, and prints what the server made of it (or obj itself on a client dry
// run). A refusal reads "failure: message" when failure is set, as kubectl words the bindings'.
func createAndPrint[T runtime.Object, L runtime.Object](ctx context.Context, o *options, cl *client.Client, f createFlags, obj T, ns, failure string) error {
	d := dryRun(f.dryRun)
	var out runtime.Object = obj
	if d != "client" {
		send, ok := obj.DeepCopyObject().(T)
		if !ok {
			return fmt.Errorf("copy %T", obj)
		}
		if ns != "" {
			m, err := meta.Accessor(send)
			if err != nil {
				return err
			}
			m.SetNamespace(ns)
		}
		opts := metav1.CreateOptions{DryRun: d.server(), FieldManager: f.fieldManager, FieldValidation: metav1.FieldValidationStrict}
		created, err := client.MustFor[T, L](cl).Create(ctx, send, opts)
		if err != nil {
			if failure != "" {
				// Flattened on purpose: kubectl prints these as its own errors, not the server's.
				return fmt.Errorf("%s: %v", failure, err) //nolint:errorlint // kubectl's wording
			}
			return err
		}
		if created.GetObjectKind().GroupVersionKind().Empty() {
			created.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
		}
		out = created
	}
	return o.printObject(f.output, out, "created"+d.suffix())
}

// roleFlags are the rule flags of `create role` and `create clusterrole`.
type roleFlags struct {
	createFlags
	verbs, resources, resourceNames []string
	nonResourceURLs                 []string
	aggregationRule                 map[string]string
}

func (r *roleFlags) add(cmd *cobra.Command) {
	r.createFlags.add(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&r.verbs, "verb", nil, "Verb that applies to the resources contained in the rule")
	f.StringSliceVar(&r.resources, "resource", nil, "Resource that the rule applies to")
	f.StringArrayVar(&r.resourceNames, "resource-name", nil, "Resource in the white list that the rule applies to, repeat this flag for multiple items")
}

// warnVerbs warns about verbs kubectl does not know for resources.
func (o *options) warnVerbs(verbs []string) {
	for _, v := range verbs {
		if !slices.Contains(policy.StandardResourceVerbs, v) {
			fmt.Fprintf(o.ErrOut, "Warning: '%s' is not a standard resource verb\n", v)
		}
	}
}

// resolveResources resolves --resource values through discovery.
func (o *options) resolveResources(ctx context.Context, cl *client.Client, rs []policy.Resource, verbs []string) ([]policy.Resource, error) {
	m, err := o.discover(ctx, cl)
	if err != nil {
		return nil, err
	}
	return policy.ResolveResources(rs, verbs, func(gr schema.GroupResource) (schema.GroupResource, error) {
		gvr, err := m.ResourceFor(gr.WithVersion(""))
		return gvr.GroupResource(), err
	})
}

func newCreateRole(o *options) *cobra.Command {
	var r roleFlags
	cmd := &cobra.Command{
		Use:   "role NAME --verb=verb --resource=resource.group/subresource [--resource-name=resourcename] [--dry-run=server|client|none]",
		Short: "Create a role with single rule",
		Example: "  kubectl create role pod-reader --verb=get --verb=list --verb=watch --resource=pods\n" +
			"  kubectl create role pod-reader --verb=get --resource=pods --resource-name=readablepod --resource-name=anotherpod\n" +
			"  kubectl create role foo --verb=get,list,watch --resource=rs.apps\n" +
			"  kubectl create role foo --verb=get,list,watch --resource=pods,pods/status",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			if err := r.validate(); err != nil {
				return err
			}
			verbs := policy.Verbs(r.verbs)
			if len(verbs) == 0 {
				return errors.New("at least one verb must be specified")
			}
			o.warnVerbs(verbs)
			resources := policy.ParseResources(r.resources)
			if len(resources) == 0 {
				return errors.New("at least one resource must be specified")
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			resources, err = o.resolveResources(ctx, cl, resources, verbs)
			if err != nil {
				return err
			}
			role := &rbacv1.Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.namespace},
				Rules:      policy.Rules(verbs, resources, policy.Unique(r.resourceNames), nil),
			}
			return createAndPrint[*rbacv1.Role, *rbacv1.RoleList](ctx, o, cl, r.createFlags, role, o.ns(), "")
		},
	}
	r.add(cmd)
	return cmd
}

func newCreateClusterRole(o *options) *cobra.Command {
	r := roleFlags{aggregationRule: map[string]string{}}
	cmd := &cobra.Command{
		Use:   "clusterrole NAME --verb=verb --resource=resource.group [--resource-name=resourcename] [--dry-run=server|client|none]",
		Short: "Create a cluster role",
		Example: "  kubectl create clusterrole pod-reader --verb=get,list,watch --resource=pods\n" +
			"  kubectl create clusterrole foo --verb=get,list,watch --resource=pods,pods/status\n" +
			"  kubectl create clusterrole \"foo\" --verb=get --non-resource-url=/logs/*\n" +
			"  kubectl create clusterrole monitoring --aggregation-rule=\"rbac.example.com/aggregate-to-monitoring=true\"",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			if err := r.validate(); err != nil {
				return err
			}
			verbs := policy.Verbs(r.verbs)
			resources := policy.ParseResources(r.resources)
			urls := policy.Unique(r.nonResourceURLs)
			names := policy.Unique(r.resourceNames)
			cr := &rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if len(r.aggregationRule) > 0 {
				if len(urls) > 0 || len(verbs) > 0 || len(resources) > 0 || len(names) > 0 {
					return errors.New("aggregation rule must be specified without nonResourceURLs, verbs, resources or resourceNames")
				}
				cr.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: r.aggregationRule}}}
				return createAndPrint[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](ctx, o, cl, r.createFlags, cr, "", "")
			}
			if len(verbs) == 0 {
				return errors.New("at least one verb must be specified")
			}
			if len(resources) == 0 && len(urls) == 0 {
				return errors.New("one of resource or nonResourceURL must be specified")
			}
			if len(resources) > 0 {
				o.warnVerbs(verbs)
				if resources, err = o.resolveResources(ctx, cl, resources, verbs); err != nil {
					return err
				}
			}
			if err := validateNonResourceURLs(urls, verbs); err != nil {
				return err
			}
			cr.Rules = policy.Rules(verbs, resources, names, urls)
			return createAndPrint[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](ctx, o, cl, r.createFlags, cr, "", "")
		},
	}
	r.add(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&r.nonResourceURLs, "non-resource-url", nil, "A partial url that user should have access to.")
	f.StringToStringVar(&r.aggregationRule, "aggregation-rule", nil, "An aggregation label selector for combining ClusterRoles.")
	return cmd
}

// validateNonResourceURLs checks a cluster role's non-resource URLs and their verbs.
func validateNonResourceURLs(urls, verbs []string) error {
	if len(urls) == 0 {
		return nil
	}
	for _, v := range verbs {
		if !slices.Contains(policy.StandardNonResourceVerbs, v) {
			return fmt.Errorf("invalid verb: '%s' for nonResourceURL", v)
		}
	}
	for _, u := range urls {
		if u == "*" {
			continue
		}
		if !strings.HasPrefix(u, "/") {
			return errors.New("nonResourceURL should start with /")
		}
		if strings.ContainsRune(u[:len(u)-1], '*') {
			return errors.New("nonResourceURL only supports wildcard matches when '*' is at the end")
		}
	}
	return nil
}

// bindingFlags are the flags of `create rolebinding` and `create clusterrolebinding`.
type bindingFlags struct {
	createFlags
	role, clusterRole              string
	users, groups, serviceAccounts []string
}

func (b *bindingFlags) add(cmd *cobra.Command, what string) {
	b.createFlags.add(cmd)
	f := cmd.Flags()
	f.StringVar(&b.clusterRole, "clusterrole", "", "ClusterRole this "+what+" should reference")
	f.StringArrayVar(&b.users, "user", nil, "Usernames to bind to the role. The flag can be repeated to add multiple users.")
	f.StringArrayVar(&b.groups, "group", nil, "Groups to bind to the role. The flag can be repeated to add multiple groups.")
	f.StringArrayVar(&b.serviceAccounts, "serviceaccount", nil, "Service accounts to bind to the role, in the format <namespace>:<name>. The flag can be repeated to add multiple service accounts.")
}

// subjects are the users, groups and service accounts to bind, in that order.
func (b bindingFlags) subjects() ([]rbacv1.Subject, error) {
	var out []rbacv1.Subject
	for _, u := range b.users {
		out = append(out, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	for _, g := range b.groups {
		out = append(out, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
	}
	for _, sa := range b.serviceAccounts {
		parts := strings.Split(sa, ":")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return nil, errors.New("serviceaccount must be <namespace>:<name>")
		}
		out = append(out, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: parts[0], Name: parts[1]})
	}
	return out, nil
}

func newCreateRoleBinding(o *options) *cobra.Command {
	var b bindingFlags
	cmd := &cobra.Command{
		Use:     "rolebinding NAME --clusterrole=NAME|--role=NAME [--user=username] [--group=groupname] [--serviceaccount=namespace:serviceaccountname] [--dry-run=server|client|none]",
		Short:   "Create a role binding for a particular role or cluster role",
		Example: "  kubectl create rolebinding admin --clusterrole=admin --user=user1 --user=user2 --group=group1",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			if err := b.validate(); err != nil {
				return err
			}
			if (b.clusterRole == "") == (b.role == "") {
				return errors.New("exactly one of clusterrole or role must be specified")
			}
			ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: b.role}
			if b.clusterRole != "" {
				ref = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.clusterRole}
			}
			subjects, err := b.subjects()
			if err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			rb := &rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.namespace},
				RoleRef:    ref,
				Subjects:   subjects,
			}
			return createAndPrint[*rbacv1.RoleBinding, *rbacv1.RoleBindingList](cmd.Context(), o, cl, b.createFlags, rb, o.ns(), "failed to create rolebinding")
		},
	}
	b.add(cmd, "RoleBinding")
	cmd.Flags().StringVar(&b.role, "role", "", "Role this RoleBinding should reference")
	return cmd
}

func newCreateClusterRoleBinding(o *options) *cobra.Command {
	var b bindingFlags
	cmd := &cobra.Command{
		Use:     "clusterrolebinding NAME --clusterrole=NAME [--user=username] [--group=groupname] [--serviceaccount=namespace:serviceaccountname] [--dry-run=server|client|none]",
		Short:   "Create a cluster role binding for a particular cluster role",
		Example: "  kubectl create clusterrolebinding cluster-admin --clusterrole=cluster-admin --user=user1 --user=user2 --group=group1",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			if err := b.validate(); err != nil {
				return err
			}
			subjects, err := b.subjects()
			if err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			crb := &rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.clusterRole},
				Subjects:   subjects,
			}
			return createAndPrint[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList](cmd.Context(), o, cl, b.createFlags, crb, "", "failed to create clusterrolebinding")
		},
	}
	b.add(cmd, "ClusterRoleBinding")
	_ = cmd.MarkFlagRequired("clusterrole")
	return cmd
}
