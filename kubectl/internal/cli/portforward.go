package cli

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"minik8s.io/shared/client"
)

type portForwardFlags struct {
	addresses         []string
	podRunningTimeout time.Duration
}

func newPortForward(o *options) *cobra.Command {
	var f portForwardFlags
	cmd := &cobra.Command{
		Use:   "port-forward TYPE/NAME [options] [LOCAL_PORT:]REMOTE_PORT [...[LOCAL_PORT_N:]REMOTE_PORT_N]",
		Short: "Forward one or more local ports to a pod",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageError(cmd, "TYPE/NAME and list of ports are required for port-forward")
			}
			if f.podRunningTimeout <= 0 {
				return usageError(cmd, "--pod-running-timeout must be higher than zero")
			}
			ref, err := parsePodRef(args[0])
			if err != nil {
				return err
			}
			return o.portForward(cmd.Context(), ref, args[1:], f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.addresses, "address", []string{"localhost"}, "Addresses to listen on (comma separated). Only accepts IP addresses or localhost as a value. When localhost is supplied, kubectl will try to bind on both 127.0.0.1 and ::1 and will fail if neither of these addresses are available to bind.")
	fl.DurationVar(&f.podRunningTimeout, "pod-running-timeout", defaultPodRunningTimeout, "The length of time (like 5s, 2m, or 3h, higher than zero) to wait until at least one pod is running")
	return cmd
}

// portForward listens on the local ports and forwards every connection to the pod until ctx
// ends (an interrupt) or the connection to the pod is lost.
func (o *options) portForward(ctx context.Context, ref podRef, specs []string, f portForwardFlags) error {
	cl, cfg, err := o.streamClients()
	if err != nil {
		return err
	}
	pod, obj, err := resolvePod(ctx, cl, o.ns(), ref, f.podRunningTimeout)
	if err != nil {
		return err
	}
	var ports []string
	if svc, ok := obj.(*corev1.Service); ok {
		ports, err = servicePorts(specs, svc, pod)
	} else {
		ports, err = podPorts(specs, pod)
	}
	if err != nil {
		return err
	}
	// kubectl reads the pod again right before forwarding.
	pod, err = client.MustFor[*corev1.Pod, *corev1.PodList](cl).Get(ctx, pod.Namespace, pod.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pod.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("unable to forward port because pod is not running. Current status=%v", pod.Status.Phase)
	}
	u, err := streamURL(cfg, pod, "portforward", nil)
	if err != nil {
		return err
	}
	// SPDY tunnelled in a WebSocket first, plain SPDY when that upgrade is refused: kubectl's
	// order since v1.31.
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return err
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	tunnel, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
	if err != nil {
		return err
	}
	dialer := portforward.NewFallbackDialer(tunnel, spdyDialer, shouldFallback)
	fw, err := portforward.NewOnAddressesWithContext(ctx, dialer, f.addresses, ports, nil, o.Out, o.ErrOut)
	if err != nil {
		return err
	}
	return fw.ForwardPorts()
}

// splitPortSpec reads "[LOCAL:]REMOTE"; with more colons kubectl takes the first field for
// both.
func splitPortSpec(spec string) (local, remote string) {
	parts := strings.Split(spec, ":")
	if len(parts) == 2 {
		return parts[0], parts[1]
	}
	return parts[0], parts[0]
}

// podPorts turns named remote ports into the pod's container port numbers and checks the
// specs as client-go's forwarder will, so a bad one fails before anything is dialed.
func podPorts(specs []string, pod *corev1.Pod) ([]string, error) {
	var out []string
	for _, spec := range specs {
		local, remote := splitPortSpec(spec)
		number := remote
		if _, err := strconv.Atoi(remote); err != nil {
			p, err := containerPortByName(pod, remote)
			if err != nil {
				return nil, err
			}
			number = strconv.Itoa(int(p))
		}
		out = append(out, joinPortSpec(local, remote, number))
	}
	return out, checkPortSpecs(out)
}

// servicePorts turns a Service's ports (by number or name) into the target ports of the pod
// it selected.
func servicePorts(specs []string, svc *corev1.Service, pod *corev1.Pod) ([]string, error) {
	var out []string
	for _, spec := range specs {
		local, remote := splitPortSpec(spec)
		port, err := strconv.Atoi(remote)
		if err != nil {
			p, err := servicePortByName(svc, remote)
			if err != nil {
				return nil, err
			}
			port = int(p)
			if local == remote {
				local = strconv.Itoa(port)
			}
		}
		target, err := targetPort(svc, pod, int32(port))
		if err != nil {
			return nil, err
		}
		// A bare service port listens locally on that port, not on the target's.
		out = append(out, joinPortSpec(local, strconv.Itoa(int(target)), strconv.Itoa(int(target))))
	}
	return out, checkPortSpecs(out)
}

// joinPortSpec writes LOCAL:NUMBER, or NUMBER alone when the user gave one port for both.
func joinPortSpec(local, remote, number string) string {
	if local == remote {
		return number
	}
	return local + ":" + number
}

func containerPortByName(pod *corev1.Pod, name string) (int32, error) {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return p.ContainerPort, nil
			}
		}
	}
	return 0, fmt.Errorf("Pod '%s' does not have a named port '%s'", pod.Name, name) //nolint:staticcheck // kubectl's wording
}

func servicePortByName(svc *corev1.Service, name string) (int32, error) {
	for _, p := range svc.Spec.Ports {
		if p.Name == name {
			return p.Port, nil
		}
	}
	return 0, fmt.Errorf("Service '%s' does not have a named port '%s'", svc.Name, name) //nolint:staticcheck // kubectl's wording
}

// targetPort is the pod port a Service port sends to: its targetPort, by number or by the
// pod's port name, or the port itself when none is set or the Service is headless.
func targetPort(svc *corev1.Service, pod *corev1.Pod, port int32) (int32, error) {
	for _, p := range svc.Spec.Ports {
		switch {
		case p.Port != port:
			continue
		case svc.Spec.ClusterIP == corev1.ClusterIPNone:
			return port, nil
		case p.TargetPort.Type == intstr.String:
			return containerPortByName(pod, p.TargetPort.StrVal)
		case p.TargetPort.IntValue() == 0:
			return p.Port, nil
		}
		return int32(p.TargetPort.IntValue()), nil
	}
	return 0, fmt.Errorf("Service %s does not have a service port %d", svc.Name, port) //nolint:staticcheck // kubectl's wording
}

// checkPortSpecs applies client-go's rules (and words) to numeric specs: local 0 or empty
// picks a free port, the remote one must be 1 to 65535.
func checkPortSpecs(specs []string) error {
	for _, spec := range specs {
		parts := strings.Split(spec, ":")
		local, remote := parts[0], parts[0]
		switch len(parts) {
		case 1:
		case 2:
			local, remote = parts[0], parts[1]
			if local == "" {
				local = "0"
			}
		default:
			return fmt.Errorf("invalid port format '%s'", spec)
		}
		if _, err := strconv.ParseUint(local, 10, 16); err != nil {
			return fmt.Errorf("error parsing local port '%s': %s", local, err)
		}
		r, err := strconv.ParseUint(remote, 10, 16)
		if err != nil {
			return fmt.Errorf("error parsing remote port '%s': %s", remote, err)
		}
		if r == 0 {
			return fmt.Errorf("remote port must be > 0")
		}
	}
	return nil
}
