package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"minik8s.io/shared/client"
)

// debugFlags are kubectl debug's flags for debugging a pod with an ephemeral container.
type debugFlags struct {
	session       sessionFlags
	image         string
	pullPolicy    string
	target        string
	attach        bool
	argumentsOnly bool
}

func newDebug(o *options) *cobra.Command {
	var f debugFlags
	cmd := &cobra.Command{
		Use:   "debug POD --image=IMAGE [-it] [--target=CONTAINER] [-c NAME] [-- COMMAND [args...]]",
		Short: "Create debugging sessions for troubleshooting workloads",
		Long: "Add an ephemeral container to a running pod, in its network and, with --target, " +
			"sharing the processes of one of its containers; -i attaches to it.",
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			names, command := args, []string(nil)
			if dash >= 0 {
				names, command = args[:dash], args[dash:]
			}
			if len(names) != 1 {
				return usageError(cmd, "NAME is required for debug")
			}
			if f.image == "" {
				return usageError(cmd, "--image is required when debugging a pod with an ephemeral container")
			}
			if !cmd.Flags().Changed("attach") {
				f.attach = f.session.stdin
			}
			ref, err := parsePodRef(names[0])
			if err != nil {
				return err
			}
			if ref.res.Plural != "pods" {
				return fmt.Errorf("debugging %s is not supported; name a pod", ref.res.Plural)
			}
			return o.debug(cmd.Context(), cmd.Root().Name()+" attach", ref.name, command, f)
		},
	}
	f.session.bind(cmd.Flags())
	fl := cmd.Flags()
	fl.Lookup("container").Usage = "Container name to use for debug container."
	fl.StringVar(&f.image, "image", "", "Container image to use for debug container.")
	fl.StringVar(&f.pullPolicy, "image-pull-policy", "", "The image pull policy for the container. If left empty, this value will not be specified by the client and defaulted by the server.")
	fl.StringVar(&f.target, "target", "", "When using an ephemeral container, target processes in this container name.")
	fl.BoolVar(&f.attach, "attach", false, "If true, wait for the container to start running, and then attach as if 'kubectl attach ...' were called.  Default false, unless '-i/--stdin' is set, in which case the default is true.")
	fl.BoolVar(&f.argumentsOnly, "arguments-only", false, "If specified, everything after -- will be passed to the new container as Args instead of Command.")
	return cmd
}

// debugContainer is the ephemeral container kubectl debug adds.
func debugContainer(name string, command []string, f debugFlags) corev1.EphemeralContainer {
	ec := corev1.EphemeralContainer{
		TargetContainerName: f.target,
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: name, Image: f.image, ImagePullPolicy: corev1.PullPolicy(f.pullPolicy),
			Stdin: f.session.stdin, TTY: f.session.tty,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		},
	}
	if f.argumentsOnly {
		ec.Args = command
	} else {
		ec.Command = command
	}
	return ec
}

// debug adds the ephemeral container through pods/ephemeralcontainers with a strategic merge
// patch, as kubectl does, then attaches to it when asked (its logs if it already ended).
func (o *options) debug(ctx context.Context, attachPath, podName string, command []string, f debugFlags) error {
	cl, err := o.client()
	if err != nil {
		return err
	}
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](cl)
	pod, err := pods.Get(ctx, o.ns(), podName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if f.target != "" {
		fmt.Fprintf(o.ErrOut, "Targeting container %q. If you don't see processes from this container it may be because the container runtime doesn't support this feature.\n", f.target)
	}
	name := f.session.container
	if name == "" {
		name = "debugger-" + utilrand.String(5)
		fmt.Fprintf(o.ErrOut, "Defaulting debug container name to %s.\n", name)
	}
	if findContainer(pod, name) != nil {
		return fmt.Errorf("container %q already exists in pod %s", name, pod.Name)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{
		"ephemeralContainers": []corev1.EphemeralContainer{debugContainer(name, command, f)}}})
	if err != nil {
		return err
	}
	if _, err := pods.Patch(ctx, o.ns(), podName, types.StrategicMergePatchType, patch, "ephemeralcontainers"); err != nil {
		return err
	}
	if !f.attach {
		return nil
	}
	state, err := o.waitEphemeral(ctx, pods, podName, name, f.session.podRunningTimeout)
	if err != nil {
		return err
	}
	if state.Terminated != nil {
		// It ended before there was anything to attach to: what it printed is in its log.
		rc, err := cl.Logs(ctx, o.ns(), podName, corev1.PodLogOptions{Container: name})
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.Copy(o.Out, rc)
		return err
	}
	s := f.session
	s.container = name
	return o.attach(ctx, attachPath, podRef{res: podResource(), name: podName}, s)
}

// waitEphemeral waits until the named ephemeral container runs or has ended, and returns its
// state.
func (o *options) waitEphemeral(ctx context.Context, pods *client.Typed[*corev1.Pod, *corev1.PodList], pod, name string, timeout time.Duration) (corev1.ContainerState, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		p, err := pods.Get(ctx, o.ns(), pod, metav1.GetOptions{})
		if err != nil {
			return corev1.ContainerState{}, err
		}
		for _, cs := range p.Status.EphemeralContainerStatuses {
			if cs.Name == name && (cs.State.Running != nil || cs.State.Terminated != nil) {
				return cs.State, nil
			}
		}
		select {
		case <-ctx.Done():
			return corev1.ContainerState{}, fmt.Errorf("timed out waiting for the debug container %s of pod %s to start", name, pod)
		case <-tick.C:
		}
	}
}
