package spec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/runtime"
)

// Volumes prepares the pod's volumes on the host and returns the host path of each by volume
// name. emptyDir lives under the pod directory so that it is shared by the pod's containers
// and removed with the pod; hostPath is used in place; configMap, secret, downwardAPI and
// projected volumes are written out as files (see RefreshVolumes); a persistentVolumeClaim is
// the directory of the volume it is bound to. env gives the downward API the pod's addresses.
func (b Builder) Volumes(ctx context.Context, pod *corev1.Pod, env Env) (map[string]string, error) {
	out := make(map[string]string, len(pod.Spec.Volumes))
	base := filepath.Join(b.PodDir(string(pod.UID)), "volumes")
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.EmptyDir != nil:
			dir := filepath.Join(base, "empty-dir", v.Name)
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			// Containers may run as any user; an emptyDir is world-writable as in Kubernetes.
			if err := os.Chmod(dir, 0o777); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			out[v.Name] = dir
		case v.HostPath != nil:
			if err := hostPath(v.HostPath); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			out[v.Name] = v.HostPath.Path
		case fileVolume(v):
			dir, err := b.writeFileVolume(ctx, pod, v, env)
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			out[v.Name] = dir
		case v.PersistentVolumeClaim != nil:
			path, err := b.claimPath(ctx, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			out[v.Name] = path
		default:
			return nil, fmt.Errorf("volume %s: unsupported volume type", v.Name)
		}
	}
	return out, nil
}

// RefreshVolumes rewrites the pod's configMap, secret, downwardAPI and projected volumes
// with their sources' current content, as Kubernetes' kubelet remounts them on its periodic
// syncs: a token is renewed, a ConfigMap's edit reaches the running containers. Each volume
// changes atomically and only when its content did; a volume whose source cannot be read
// keeps its content, and the failures are returned together.
func (b Builder) RefreshVolumes(ctx context.Context, pod *corev1.Pod, env Env) error {
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !fileVolume(v) {
			continue
		}
		if _, err := b.writeFileVolume(ctx, pod, v, env); err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}

// claimPath follows a claim to the volume it is bound to and returns the host directory to
// bind-mount: a hostPath (what our provisioner makes, on storage every node mounts at the
// same path) or a local volume. A claim that is not bound yet is an error the pod's worker
// retries, so the pod starts once it is.
func (b Builder) claimPath(ctx context.Context, namespace, name string) (string, error) {
	if b.Lookup == nil {
		return "", fmt.Errorf("persistentvolumeclaim %q: no API to read it", name)
	}
	pvc, err := b.Lookup.PersistentVolumeClaim(ctx, namespace, name)
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q: %w", name, err)
	}
	if pvc.DeletionTimestamp != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q is being deleted", name)
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("persistentvolumeclaim %q is not bound (phase %s)", name, pvc.Status.Phase)
	}
	pv, err := b.Lookup.PersistentVolume(ctx, pvc.Spec.VolumeName)
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q: volume %q: %w", name, pvc.Spec.VolumeName, err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != pvc.UID {
		return "", fmt.Errorf("persistentvolumeclaim %q: volume %q is not bound to it", name, pv.Name)
	}
	switch {
	case pv.Spec.HostPath != nil:
		if err := hostPath(pv.Spec.HostPath); err != nil {
			return "", fmt.Errorf("persistentvolumeclaim %q: volume %q: %w", name, pv.Name, err)
		}
		return pv.Spec.HostPath.Path, nil
	case pv.Spec.Local != nil:
		if fi, err := os.Stat(pv.Spec.Local.Path); err != nil {
			return "", fmt.Errorf("persistentvolumeclaim %q: volume %q: %w", name, pv.Name, err)
		} else if !fi.IsDir() {
			return "", fmt.Errorf("persistentvolumeclaim %q: volume %q: local path %s is not a directory", name, pv.Name, pv.Spec.Local.Path)
		}
		return pv.Spec.Local.Path, nil
	}
	return "", fmt.Errorf("persistentvolumeclaim %q: volume %q: unsupported volume source (hostPath and local are)", name, pv.Name)
}

// readOnlyVolumes are the pod's volumes every mount of which is read-only: claims mounted
// with readOnly, and the volumes the kubelet writes (configMap, secret, downwardAPI,
// projected), which Kubernetes mounts read-only so a container cannot alter what the next
// refresh would silently undo.
func readOnlyVolumes(pod *corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if c := v.PersistentVolumeClaim; (c != nil && c.ReadOnly) || fileVolume(v) {
			out[v.Name] = true
		}
	}
	return out
}

func hostPath(h *corev1.HostPathVolumeSource) error {
	typ := corev1.HostPathUnset
	if h.Type != nil {
		typ = *h.Type
	}
	switch typ {
	case corev1.HostPathDirectoryOrCreate:
		return os.MkdirAll(h.Path, 0o755)
	case corev1.HostPathFileOrCreate:
		if err := os.MkdirAll(filepath.Dir(h.Path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(h.Path, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	case corev1.HostPathDirectory, corev1.HostPathFile:
		fi, err := os.Stat(h.Path)
		if err != nil {
			return err
		}
		if fi.IsDir() != (typ == corev1.HostPathDirectory) {
			return fmt.Errorf("hostPath %s is not a %s", h.Path, typ)
		}
	}
	return nil
}

func mountsFor(c *corev1.Container, volumes map[string]string, readOnly map[string]bool) ([]runtime.Mount, error) {
	var out []runtime.Mount
	for _, m := range c.VolumeMounts {
		host, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %s: no such volume", m.Name)
		}
		if m.SubPath != "" {
			host = filepath.Join(host, filepath.Clean("/"+m.SubPath))
			// A subPath that exists may be a file (a ConfigMap's key); one that does not
			// is made a directory, as Kubernetes does.
			if _, err := os.Stat(host); errors.Is(err, fs.ErrNotExist) {
				if err := os.MkdirAll(host, 0o777); err != nil {
					return nil, fmt.Errorf("volumeMount %s: %w", m.Name, err)
				}
			} else if err != nil {
				return nil, fmt.Errorf("volumeMount %s: %w", m.Name, err)
			}
		}
		out = append(out, runtime.Mount{HostPath: host, ContainerPath: m.MountPath, ReadOnly: m.ReadOnly || readOnly[m.Name]})
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
