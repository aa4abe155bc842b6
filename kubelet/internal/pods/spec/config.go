package spec

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/runtime"
)

// resolvConfMount is where a pod's resolv.conf is mounted; a volumeMount of the pod's own
// there wins.
const resolvConfMount = "/etc/resolv.conf"

// DefaultSandboxImage is the pause image `make images` builds.
const DefaultSandboxImage = "minik8s/pause:1.0"

// Lookup resolves the ConfigMaps, Secrets and claims a pod refers to, and the volumes claims
// are bound to. It is optional: without it, references to them fail the container with
// CreateContainerConfigError, and claims cannot be mounted.
type Lookup interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	PersistentVolumeClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error)
	PersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error)
}

// Builder turns pods into container configurations.
type Builder struct {
	// NodeName labels every container with the node it belongs to.
	NodeName string
	// RootDir holds per-pod state: <RootDir>/pods/<uid>/volumes/...
	RootDir      string
	SandboxImage string
	Lookup       Lookup
	// Tokens hands out the tokens of serviceAccountToken projections; without it they fail.
	Tokens Tokens
	// Services gives containers their Service variables (KUBERNETES_SERVICE_HOST...);
	// without it they get none.
	Services ServiceLister
	// Allocatable is the node's: the resource limits the downward API reports for
	// containers that set none.
	Allocatable corev1.ResourceList
}

// Runtime facts a container's environment may refer to.
type Env struct {
	PodIP    string
	HostIP   string
	NodeName string
	// ResolvConf is the host path of the pod's own resolv.conf (ResolvConfPath), mounted at
	// /etc/resolv.conf; empty leaves the runtime's.
	ResolvConf string
	// Hosts is the host path of the pod's hosts file (HostsPath), mounted at /etc/hosts;
	// empty leaves the runtime's.
	Hosts string
}

// ResolvConfPath is where the pod's resolv.conf is kept when it has one of its own.
func (b Builder) ResolvConfPath(uid string) string {
	return filepath.Join(b.PodDir(uid), "resolv.conf")
}

func (b Builder) sandboxImage() string {
	if b.SandboxImage == "" {
		return DefaultSandboxImage
	}
	return b.SandboxImage
}

// PodDir is where the kubelet keeps files of the pod with the given uid.
func (b Builder) PodDir(uid string) string {
	return filepath.Join(b.RootDir, "pods", uid)
}

// Sandbox is the configuration of the pod's pause container: it owns the network namespace
// (attached by the network plugin afterwards, hence NetworkMode none) and a shareable IPC
// namespace the app containers join. A hostNetwork pod's sandbox is on the node's network
// with the node's hostname instead, and a hostPID pod's sees the node's processes.
func (b Builder) Sandbox(pod *corev1.Pod, attempt int) runtime.ContainerConfig {
	cfg := runtime.ContainerConfig{
		Name:        ContainerName(pod, SandboxName, attempt),
		Image:       b.sandboxImage(),
		Labels:      labelsFor(b.NodeName, pod, SandboxName, SandboxHash(pod), attempt, true),
		Hostname:    pod.Name,
		NetworkMode: "none",
		IpcMode:     "shareable",
		PidMode:     pidMode(pod),
	}
	if pod.Spec.Hostname != "" {
		cfg.Hostname = pod.Spec.Hostname
	}
	if pod.Spec.HostNetwork {
		cfg.Hostname, cfg.NetworkMode, cfg.UTSMode = "", "host", "host"
	}
	return cfg
}

// pidMode is the runtime's PID namespace mode for the pod's containers.
func pidMode(pod *corev1.Pod) string {
	if pod.Spec.HostPID {
		return "host"
	}
	return ""
}

// Container is the configuration of an app or init container joining the sandbox's
// namespaces. volumes maps volume names to host paths (see Volumes).
func (b Builder) Container(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sandboxID string, restarts int, env Env, volumes map[string]string) (runtime.ContainerConfig, error) {
	vars, err := b.envFor(ctx, pod, c, env)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	mounts, err := mountsFor(c, volumes, readOnlyVolumes(pod))
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	if env.ResolvConf != "" && !slices.ContainsFunc(mounts, func(m runtime.Mount) bool { return m.ContainerPath == resolvConfMount }) {
		mounts = append(mounts, runtime.Mount{HostPath: env.ResolvConf, ContainerPath: resolvConfMount})
	}
	if env.Hosts != "" && !slices.ContainsFunc(mounts, func(m runtime.Mount) bool { return m.ContainerPath == hostsMount }) {
		mounts = append(mounts, runtime.Mount{HostPath: env.Hosts, ContainerPath: hostsMount})
	}
	join := "container:" + sandboxID
	return runtime.ContainerConfig{
		Name:        ContainerName(pod, c.Name, restarts),
		Image:       c.Image,
		Command:     c.Command,
		Args:        c.Args,
		WorkingDir:  c.WorkingDir,
		Env:         vars,
		Labels:      labelsFor(b.NodeName, pod, c.Name, Hash(c), restarts, false),
		NetworkMode: join,
		IpcMode:     join,
		UTSMode:     join,
		PidMode:     pidMode(pod),
		Mounts:      mounts,
		Resources:   ResourcesFor(c.Resources),
		// Without them `kubectl attach` would have no input to send to nor terminal to size.
		Stdin:     c.Stdin,
		StdinOnce: c.StdinOnce,
		TTY:       c.TTY,
	}, nil
}

// ResourcesFor maps Kubernetes resources to cgroup settings the way the kubelet does:
// limits.cpu becomes a CFS quota over a 100 ms period, requests.cpu becomes shares (1024 per
// core, at least 2, the kernel's minimum), limits.memory a hard limit.
func ResourcesFor(r corev1.ResourceRequirements) runtime.Resources {
	var out runtime.Resources
	if q, ok := r.Limits[corev1.ResourceCPU]; ok && !q.IsZero() {
		out.CPUPeriod = 100000
		out.CPUQuota = q.MilliValue() * 100
		// The kernel refuses quotas under 1 ms.
		if out.CPUQuota < 1000 {
			out.CPUQuota = 1000
		}
	}
	req, ok := r.Requests[corev1.ResourceCPU]
	if !ok {
		// Kubernetes defaults requests to limits when only limits are given.
		req, ok = r.Limits[corev1.ResourceCPU]
	}
	if ok {
		shares := req.MilliValue() * 1024 / 1000
		if shares < 2 {
			shares = 2
		}
		out.CPUShares = shares
	}
	if q, ok := r.Limits[corev1.ResourceMemory]; ok {
		out.MemoryLimit = q.Value()
	}
	return out
}

// envFor is the container's environment: envFrom, then env in the order declared, then the
// Service variables the container does not define itself, in name order. They are not part of
// the container's hash: a Service changing restarts nothing.
func (b Builder) envFor(ctx context.Context, pod *corev1.Pod, c *corev1.Container, env Env) ([]string, error) {
	services, err := b.serviceEnv(pod)
	if err != nil {
		return nil, err
	}
	var out []string
	// Values may refer to earlier variables and to Service variables with $(NAME), as in
	// Kubernetes; declared ones win.
	seen := make(map[string]string, len(services))
	for k, v := range services {
		seen[k] = v
	}
	declared := map[string]bool{}
	for _, from := range c.EnvFrom {
		kv, err := b.envFromSource(ctx, pod.Namespace, from)
		if err != nil {
			return nil, err
		}
		for _, p := range kv {
			seen[p[0]] = p[1]
			declared[p[0]] = true
			out = append(out, p[0]+"="+p[1])
		}
	}
	for _, e := range c.Env {
		v, err := b.envValue(ctx, pod, c, e, env, seen)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		seen[e.Name] = v
		declared[e.Name] = true
		out = append(out, e.Name+"="+v)
	}
	return append(out, sortedEnv(services, declared)...), nil
}

func (b Builder) envFromSource(ctx context.Context, ns string, from corev1.EnvFromSource) ([][2]string, error) {
	var data map[string]string
	switch {
	case from.ConfigMapRef != nil:
		cm, err := b.configMap(ctx, ns, from.ConfigMapRef.Name)
		if err != nil {
			if optional(from.ConfigMapRef.Optional) {
				return nil, nil
			}
			return nil, err
		}
		data = cm.Data
	case from.SecretRef != nil:
		s, err := b.secret(ctx, ns, from.SecretRef.Name)
		if err != nil {
			if optional(from.SecretRef.Optional) {
				return nil, nil
			}
			return nil, err
		}
		data = map[string]string{}
		for k, v := range s.Data {
			data[k] = string(v)
		}
	}
	keys := sortedKeys(data)
	out := make([][2]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, [2]string{from.Prefix + k, data[k]})
	}
	return out, nil
}

func (b Builder) envValue(ctx context.Context, pod *corev1.Pod, c *corev1.Container, e corev1.EnvVar, env Env, seen map[string]string) (string, error) {
	if e.ValueFrom == nil {
		return expand(e.Value, seen), nil
	}
	src := e.ValueFrom
	switch {
	case src.FieldRef != nil:
		return fieldValue(pod, src.FieldRef.FieldPath, env)
	case src.ResourceFieldRef != nil:
		// Without a container name, the variable's own container.
		if src.ResourceFieldRef.ContainerName == "" {
			return b.containerResourceValue(src.ResourceFieldRef, c)
		}
		return b.podResourceValue(pod, src.ResourceFieldRef)
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := b.configMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if optional(ref.Optional) {
				return "", nil
			}
			return "", err
		}
		v, ok := cm.Data[ref.Key]
		if !ok && !optional(ref.Optional) {
			return "", fmt.Errorf("key %s not found in configmap %s", ref.Key, ref.Name)
		}
		return v, nil
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := b.secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if optional(ref.Optional) {
				return "", nil
			}
			return "", err
		}
		v, ok := s.Data[ref.Key]
		if !ok && !optional(ref.Optional) {
			return "", fmt.Errorf("key %s not found in secret %s", ref.Key, ref.Name)
		}
		return string(v), nil
	}
	return "", nil
}

func fieldValue(pod *corev1.Pod, path string, env Env) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		if env.NodeName != "" {
			return env.NodeName, nil
		}
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return env.PodIP, nil
	case "status.hostIP":
		return env.HostIP, nil
	}
	if k, ok := strings.CutPrefix(path, "metadata.labels['"); ok {
		return pod.Labels[strings.TrimSuffix(k, "']")], nil
	}
	if k, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
		return pod.Annotations[strings.TrimSuffix(k, "']")], nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

// expand replaces $(NAME) with earlier variables; $$ escapes, unknown references stay as
// written, as Kubernetes does.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+end+1])
			}
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func (b Builder) configMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if b.Lookup == nil {
		return nil, fmt.Errorf("configmap %s/%s: no lookup configured", ns, name)
	}
	cm, err := b.Lookup.ConfigMap(ctx, ns, name)
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %w", ns, name, err)
	}
	return cm, nil
}

func (b Builder) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	if b.Lookup == nil {
		return nil, fmt.Errorf("secret %s/%s: no lookup configured", ns, name)
	}
	s, err := b.Lookup.Secret(ctx, ns, name)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", ns, name, err)
	}
	return s, nil
}

func optional(p *bool) bool { return p != nil && *p }

// Restarts reads the restart count a container was created with.
func Restarts(c runtime.Container) int {
	n, _ := strconv.Atoi(c.Labels[LabelRestartCount])
	return n
}
