package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
)

func newAttach(o *options) *cobra.Command {
	var f sessionFlags
	cmd := &cobra.Command{
		Use:   "attach (POD | TYPE/NAME) -c CONTAINER",
		Short: "Attach to a running container",
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.podRunningTimeout <= 0 {
				return usageError(cmd, "--pod-running-timeout must be higher than zero")
			}
			ref, err := parseAttachArgs(args)
			if err != nil {
				return err
			}
			return o.attach(cmd.Context(), cmd.CommandPath(), ref, f)
		},
	}
	f.bind(cmd.Flags())
	return cmd
}

// parseAttachArgs reads "POD", "TYPE/NAME" or "TYPE NAME".
func parseAttachArgs(args []string) (podRef, error) {
	switch len(args) {
	case 0:
		return podRef{}, fmt.Errorf("at least 1 argument is required for attach")
	case 1:
		return parsePodRef(args[0])
	case 2:
		return parsePodRef(args[0] + "/" + args[1])
	}
	return podRef{}, fmt.Errorf("expected POD, TYPE/NAME, or TYPE NAME, (at most 2 arguments) saw %d: %v", len(args), args)
}

func (o *options) attach(ctx context.Context, commandPath string, ref podRef, f sessionFlags) error {
	cl, cfg, err := o.streamClients()
	if err != nil {
		return err
	}
	pod, err := attachablePod(ctx, cl, o.ns(), ref, f.podRunningTimeout)
	if err != nil {
		return err
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return fmt.Errorf("cannot attach a container in a completed pod; current phase is %s", pod.Status.Phase)
	}
	c, err := o.attachContainer(pod, f.container, f.quiet)
	if err != nil {
		return fmt.Errorf("cannot attach to the container: %w", err)
	}
	// The session has a TTY exactly when the container has one: without it the main
	// process's output would be read as multiplexed frames it is not.
	tty := f.tty
	switch {
	case tty && !c.TTY:
		tty = false
		if !f.quiet {
			fmt.Fprintf(o.ErrOut, "error: Unable to use a TTY - container %s did not allocate one\n", c.Name)
		}
	case !tty && c.TTY:
		tty = true
	}
	s := o.setupSession(f.stdin, tty, f.quiet)
	s.nudge = true
	if !f.quiet {
		fmt.Fprintln(o.ErrOut, "If you don't see a command prompt, try pressing enter.")
	}
	err = s.run(ctx, func(ctx context.Context, so remotecommand.StreamOptions) error {
		q := streamQuery(c.Name, so.Stdin != nil, so.Stdout != nil, so.Stderr != nil, so.Tty)
		u, err := streamURL(cfg, pod, "attach", q)
		if err != nil {
			return err
		}
		return runStream(ctx, cfg, u, so)
	})
	if err != nil {
		return err
	}
	if !f.quiet && s.in != nil && s.tty {
		fmt.Fprintln(o.Out, reattachMessage(commandPath, pod, c.Name))
	}
	return nil
}

// attachContainer is the container -c names (which must exist: its TTY decides the
// session's), or the default one with kubectl's notice unless quiet.
func (o *options) attachContainer(pod *corev1.Pod, name string, quiet bool) (*corev1.Container, error) {
	if name != "" {
		if c := findContainer(pod, name); c != nil {
			return c, nil
		}
		return nil, fmt.Errorf("container %s not found in pod %s", name, pod.Name)
	}
	c, notice, err := defaultContainer(pod)
	if err != nil {
		return nil, err
	}
	if notice != "" && !quiet {
		fmt.Fprintln(o.ErrOut, notice)
	}
	return c, nil
}

// reattachMessage is kubectl v1.32's line after an interactive session ends.
func reattachMessage(commandPath string, pod *corev1.Pod, container string) string {
	for _, ec := range pod.Spec.EphemeralContainers {
		if ec.Name == container {
			return fmt.Sprintf("Session ended, the ephemeral container will not be restarted but may be reattached using '%s %s -c %s -i -t' if it is still running", commandPath, pod.Name, container)
		}
	}
	return fmt.Sprintf("Session ended, resume using '%s %s -c %s -i -t' command when the pod is running", commandPath, pod.Name, container)
}
