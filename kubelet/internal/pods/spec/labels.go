package spec

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Labels carried by every container the kubelet creates.
const (
	LabelPodUID        = "minik8s.io/pod-uid"
	LabelPodName       = "minik8s.io/pod-name"
	LabelPodNamespace  = "minik8s.io/pod-namespace"
	LabelContainerName = "minik8s.io/container-name"
	LabelContainerHash = "minik8s.io/container-hash"
	LabelRestartCount  = "minik8s.io/restart-count"
	LabelSandbox       = "minik8s.io/sandbox"
	// LabelNode names the node whose kubelet made the container: several kubelets may share
	// one Docker engine (simulated nodes, tests), and each owns only its own containers.
	LabelNode = "minik8s.io/node"

	// SandboxName is the container-name label of a pod's sandbox.
	SandboxName = "POD"
)

// Info is what a container's labels say about it.
type Info struct {
	PodUID       string
	PodName      string
	Namespace    string
	Container    string
	Hash         string
	RestartCount int
	Sandbox      bool
}

// Parse reads a container's labels; ok is false for containers the kubelet did not create.
func Parse(labels map[string]string) (Info, bool) {
	uid := labels[LabelPodUID]
	name := labels[LabelContainerName]
	if uid == "" || name == "" {
		return Info{}, false
	}
	// A missing or garbled count means the container was made by hand; counting restarts from
	// zero is the only safe reading.
	n, _ := strconv.Atoi(labels[LabelRestartCount])
	return Info{
		PodUID:       uid,
		PodName:      labels[LabelPodName],
		Namespace:    labels[LabelPodNamespace],
		Container:    name,
		Hash:         labels[LabelContainerHash],
		RestartCount: n,
		Sandbox:      labels[LabelSandbox] == "true",
	}, true
}

func labelsFor(node string, pod *corev1.Pod, container, hash string, restarts int, sandbox bool) map[string]string {
	l := map[string]string{
		LabelPodUID:        string(pod.UID),
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelContainerName: container,
		LabelContainerHash: hash,
		LabelRestartCount:  strconv.Itoa(restarts),
	}
	if sandbox {
		l[LabelSandbox] = "true"
	}
	if node != "" {
		l[LabelNode] = node
	}
	return l
}

// hashed is the part of a container spec whose change means the container must be replaced.
// Probes, imagePullPolicy, lifecycle and termination settings are left out, as in Kubernetes:
// changing them does not require a new process.
type hashed struct {
	Image        string                      `json:"image"`
	Command      []string                    `json:"command,omitempty"`
	Args         []string                    `json:"args,omitempty"`
	Env          []corev1.EnvVar             `json:"env,omitempty"`
	Ports        []corev1.ContainerPort      `json:"ports,omitempty"`
	Resources    corev1.ResourceRequirements `json:"resources"`
	VolumeMounts []corev1.VolumeMount        `json:"volumeMounts,omitempty"`
	WorkingDir   string                      `json:"workingDir,omitempty"`
	// Omitted when false, so containers created before they were hashed keep their hash.
	Stdin     bool `json:"stdin,omitempty"`
	StdinOnce bool `json:"stdinOnce,omitempty"`
	TTY       bool `json:"tty,omitempty"`
}

// Hash is a stable digest of the restart-relevant fields of c.
func Hash(c *corev1.Container) string {
	b, err := json.Marshal(hashed{
		Image: c.Image, Command: c.Command, Args: c.Args, Env: c.Env, Ports: c.Ports,
		Resources: c.Resources, VolumeMounts: c.VolumeMounts, WorkingDir: c.WorkingDir,
		Stdin: c.Stdin, StdinOnce: c.StdinOnce, TTY: c.TTY,
	})
	if err != nil {
		// The fields are plain data; Marshal cannot fail on them.
		panic(fmt.Sprintf("hash container %s: %v", c.Name, err))
	}
	h := fnv.New64a()
	h.Write(b)
	return strconv.FormatUint(h.Sum64(), 16)
}

// SandboxHash identifies the sandbox configuration of a pod: a pod's sandbox is recreated when
// its host ports or hostname change.
func SandboxHash(pod *corev1.Pod) string {
	var ports []corev1.ContainerPort
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				ports = append(ports, p)
			}
		}
	}
	b, _ := json.Marshal(struct {
		Ports    []corev1.ContainerPort `json:"ports,omitempty"`
		Hostname string                 `json:"hostname,omitempty"`
	}{ports, pod.Spec.Hostname})
	h := fnv.New64a()
	h.Write(b)
	return strconv.FormatUint(h.Sum64(), 16)
}

// ContainerName is the runtime name of a container, unique per attempt so that an exited
// container can be kept for `logs --previous` while its replacement runs.
func ContainerName(pod *corev1.Pod, container string, attempt int) string {
	return fmt.Sprintf("k8s_%s_%s_%s_%s_%d", container, pod.Name, pod.Namespace, pod.UID, attempt)
}
