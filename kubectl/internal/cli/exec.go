package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"minik8s.io/shared/client"
)

// defaultPodRunningTimeout is kubectl's --pod-running-timeout for exec, attach and
// port-forward.
const defaultPodRunningTimeout = 60 * time.Second

// errExecWithoutDash is kubectl's answer to the old "exec POD COMMAND" form.
var errExecWithoutDash = errors.New("exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead")

// sessionFlags are the flags exec and attach share, with kubectl's names and help.
type sessionFlags struct {
	container         string
	stdin, tty, quiet bool
	podRunningTimeout time.Duration
}

func (f *sessionFlags) bind(fl *pflag.FlagSet) {
	fl.StringVarP(&f.container, "container", "c", "", "Container name. If omitted, use the kubectl.kubernetes.io/default-container annotation for selecting the container to be attached or the first container in the pod will be chosen")
	fl.BoolVarP(&f.stdin, "stdin", "i", false, "Pass stdin to the container")
	fl.BoolVarP(&f.tty, "tty", "t", false, "Stdin is a TTY")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "Only print output from the remote session")
	fl.DurationVar(&f.podRunningTimeout, "pod-running-timeout", defaultPodRunningTimeout, "The length of time (like 5s, 2m, or 3h, higher than zero) to wait until at least one pod is running")
}

func newExec(o *options) *cobra.Command {
	var f sessionFlags
	cmd := &cobra.Command{
		Use:   "exec (POD | TYPE/NAME) [-c CONTAINER] [flags] -- COMMAND [args...]",
		Short: "Execute a command in a container",
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, command, err := parseExecArgs(args, cmd.ArgsLenAtDash())
			if errors.Is(err, errExecWithoutDash) {
				return usageError(cmd, "%s", err)
			}
			// kubectl checks the timeout before it validates the arguments.
			if f.podRunningTimeout <= 0 {
				return usageError(cmd, "--pod-running-timeout must be higher than zero")
			}
			if err != nil {
				return err
			}
			return o.exec(cmd.Context(), ref, command, f)
		},
	}
	f.bind(cmd.Flags())
	return cmd
}

// parseExecArgs splits "POD -- COMMAND..." at the dash, as kubectl does: one argument before
// it, the command after. dash is cobra's ArgsLenAtDash (-1 without a dash).
func parseExecArgs(args []string, dash int) (podRef podRef, command []string, err error) {
	var ref string
	if len(args) > 0 && dash != 0 {
		ref = args[0]
	}
	switch {
	case dash == 0 || dash == 1:
		command = args[dash:]
	case len(args) > 1:
		return podRef, nil, errExecWithoutDash
	}
	if ref == "" {
		return podRef, nil, errors.New("pod, type/name or --filename must be specified")
	}
	if len(command) == 0 {
		return podRef, nil, errors.New("you must specify at least one command for the container")
	}
	podRef, err = parsePodRef(ref)
	return podRef, command, err
}

func (o *options) exec(ctx context.Context, ref podRef, command []string, f sessionFlags) error {
	cl, cfg, err := o.streamClients()
	if err != nil {
		return err
	}
	pod, err := attachablePod(ctx, cl, o.ns(), ref, f.podRunningTimeout)
	if err != nil {
		return err
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return fmt.Errorf("cannot exec into a container in a completed pod; current phase is %s", pod.Status.Phase)
	}
	container, notice, err := containerName(pod, f.container)
	if err != nil {
		return err
	}
	if notice != "" && !f.quiet {
		fmt.Fprintln(o.ErrOut, notice)
	}
	s := o.setupSession(f.stdin, f.tty, f.quiet)
	return s.run(ctx, func(ctx context.Context, so remotecommand.StreamOptions) error {
		return execIn(ctx, cfg, pod, container, command, so)
	})
}

// execIn runs command in a container of pod with the streams of so; a non-zero exit
// status comes back as client-go's exec.CodeExitError.
func execIn(ctx context.Context, cfg *rest.Config, pod *corev1.Pod, container string, command []string, so remotecommand.StreamOptions) error {
	q := streamQuery(container, so.Stdin != nil, so.Stdout != nil, so.Stderr != nil, so.Tty)
	q["command"] = command
	u, err := streamURL(cfg, pod, "exec", q)
	if err != nil {
		return err
	}
	return runStream(ctx, cfg, u, so)
}

// streamClients is our client (for reading pods) and client-go's config (for the stream),
// both from the same kubeconfig and flags.
func (o *options) streamClients() (*client.Client, *rest.Config, error) {
	cl, err := o.client()
	if err != nil {
		return nil, nil, err
	}
	cfg, err := o.restConfig()
	if err != nil {
		return nil, nil, err
	}
	return cl, cfg, nil
}

// containerName is the container -c names, or the default one with kubectl's notice when
// it had others to choose from. A named container is not looked up: the apiserver refuses an
// unknown one, naming it.
func containerName(pod *corev1.Pod, name string) (container, notice string, err error) {
	if name != "" {
		return name, "", nil
	}
	c, notice, err := defaultContainer(pod)
	if err != nil {
		return "", "", err
	}
	return c.Name, notice, nil
}
