package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/scheme"
)

// boundObjectKinds are the kinds a token can be bound to, in the order kubectl lists them.
var boundObjectKinds = []string{"Node", "Pod", "Secret"}

type tokenFlags struct {
	output                         string
	audiences                      []string
	duration                       time.Duration
	boundKind, boundName, boundUID string
}

func (f tokenFlags) validate() error {
	if f.duration < 0 {
		return errors.New("--duration must be greater than or equal to 0")
	}
	if f.duration%time.Second != 0 {
		return errors.New("--duration cannot be expressed in units less than seconds")
	}
	for _, a := range f.audiences {
		if a == "" {
			return errors.New("--audience must not be an empty string")
		}
	}
	if f.boundKind == "" {
		if f.boundName != "" {
			return errors.New("--bound-object-name can only be set if --bound-object-kind is provided")
		}
		if f.boundUID != "" {
			return errors.New("--bound-object-uid can only be set if --bound-object-kind is provided")
		}
		return nil
	}
	if !slices.Contains(boundObjectKinds, f.boundKind) {
		return fmt.Errorf("supported --bound-object-kind values are %s", strings.Join(boundObjectKinds, ", "))
	}
	if f.boundName == "" {
		return errors.New("--bound-object-name is required if --bound-object-kind is provided")
	}
	return nil
}

// request is the TokenRequest the flags ask for.
func (f tokenFlags) request() *authenticationv1.TokenRequest {
	tr := &authenticationv1.TokenRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: authenticationv1.SchemeGroupVersion.String(), Kind: "TokenRequest"},
		Spec:     authenticationv1.TokenRequestSpec{Audiences: f.audiences},
	}
	if f.duration > 0 {
		secs := int64(f.duration / time.Second)
		tr.Spec.ExpirationSeconds = &secs
	}
	if f.boundKind != "" {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: f.boundKind, APIVersion: "v1", Name: f.boundName, UID: types.UID(f.boundUID)}
	}
	return tr
}

func newCreateToken(o *options) *cobra.Command {
	var f tokenFlags
	cmd := &cobra.Command{
		Use:   "token SERVICE_ACCOUNT_NAME",
		Short: "Request a service account token",
		Example: "  kubectl create token myapp\n" +
			"  kubectl create token myapp --namespace myns\n" +
			"  kubectl create token myapp --duration 10m\n" +
			"  kubectl create token myapp --audience https://example.com\n" +
			"  kubectl create token myapp --bound-object-kind Pod --bound-object-name mypod",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			if err := validateObjectOutput(f.output); err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			if err := f.validate(); err != nil {
				return err
			}
			sa, _ := scheme.Lookup("serviceaccounts")
			var resp authenticationv1.TokenRequest
			if err := cl.Post().Resource(sa, o.ns(), name, "token").Body(f.request()).Into(cmd.Context(), &resp); err != nil {
				// Flattened on purpose: kubectl prints this as its own error, not the server's.
				return fmt.Errorf("failed to create token: %v", err) //nolint:errorlint // kubectl's wording
			}
			if resp.Status.Token == "" {
				return errors.New("failed to create token: no token in server response")
			}
			if f.output != "" {
				if resp.GetObjectKind().GroupVersionKind().Empty() {
					resp.TypeMeta = f.request().TypeMeta
				}
				return o.printObject(f.output, &resp, "created")
			}
			// A terminal gets a newline; a pipe gets the token alone, ready for $(...).
			if file, ok := o.Out.(*os.File); ok && term.IsTerminal(int(file.Fd())) {
				_, err = fmt.Fprintln(o.Out, resp.Status.Token)
				return err
			}
			_, err = fmt.Fprint(o.Out, resp.Status.Token)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "", "Output format. One of: (json, yaml, name).")
	fl.StringArrayVar(&f.audiences, "audience", nil, "Audience of the requested token. If unset, defaults to requesting a token for use with the Kubernetes API server. May be repeated to request a token valid for multiple audiences.")
	fl.DurationVar(&f.duration, "duration", 0, "Requested lifetime of the issued token. If not set or if set to 0, the lifetime will be determined by the server automatically. The server may return a token with a longer or shorter lifetime.")
	fl.StringVar(&f.boundKind, "bound-object-kind", "", "Kind of an object to bind the token to. Supported kinds are "+strings.Join(boundObjectKinds, ", ")+". If set, --bound-object-name must be provided.")
	fl.StringVar(&f.boundName, "bound-object-name", "", "Name of an object to bind the token to. The token will expire when the object is deleted. Requires --bound-object-kind.")
	fl.StringVar(&f.boundUID, "bound-object-uid", "", "UID of an object to bind the token to. Requires --bound-object-kind and --bound-object-name. If unset, the UID of the existing object is used.")
	return cmd
}
