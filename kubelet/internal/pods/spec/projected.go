package spec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/pods/atomicdir"
	"minik8s.io/shared/apierror"
)

const (
	// defaultMode is the API's default for configMap, secret, downwardAPI and projected
	// volumes' defaultMode.
	defaultMode int32 = 0o644
	// defaultTokenSeconds is the API's default expirationSeconds of a serviceAccountToken
	// projection.
	defaultTokenSeconds int64 = 3600
)

// Tokens hands out ServiceAccount tokens for serviceAccountToken projections (the kubelet's
// token.Manager, which caches and refreshes them).
type Tokens interface {
	GetServiceAccountToken(ctx context.Context, namespace, name string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error)
}

// fileVolume reports whether the volume is made of files the kubelet writes, and so is
// rewritten while the pod runs: configMap, secret, downwardAPI and projected volumes.
func fileVolume(v *corev1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
}

// HasFileVolumes reports whether the pod has volumes RefreshVolumes rewrites.
func HasFileVolumes(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if fileVolume(&pod.Spec.Volumes[i]) {
			return true
		}
	}
	return false
}

// fileVolumeDir is where a file volume lives on the host, by kind.
func (b Builder) fileVolumeDir(pod *corev1.Pod, v *corev1.Volume) string {
	kind := "projected"
	switch {
	case v.ConfigMap != nil:
		kind = "configmap"
	case v.Secret != nil:
		kind = "secret"
	case v.DownwardAPI != nil:
		kind = "downward-api"
	}
	return filepath.Join(b.PodDir(string(pod.UID)), "volumes", kind, v.Name)
}

// writeFileVolume computes a file volume's content and writes it atomically (see
// atomicdir): a container never sees a half-updated volume. Nothing is written when any
// source fails, so a volume keeps its last good content.
func (b Builder) writeFileVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, env Env) (string, error) {
	files, err := b.volumeFiles(ctx, pod, v, env)
	if err != nil {
		return "", err
	}
	dir := b.fileVolumeDir(pod, v)
	if err := atomicdir.Write(dir, files); err != nil {
		return "", err
	}
	return dir, nil
}

func (b Builder) volumeFiles(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, env Env) (map[string]atomicdir.File, error) {
	switch {
	case v.ConfigMap != nil:
		s := v.ConfigMap
		return b.configMapFiles(ctx, pod.Namespace, s.Name, s.Items, optional(s.Optional), modeOr(s.DefaultMode))
	case v.Secret != nil:
		s := v.Secret
		return b.secretFiles(ctx, pod.Namespace, s.SecretName, s.Items, optional(s.Optional), modeOr(s.DefaultMode))
	case v.DownwardAPI != nil:
		return b.downwardFiles(pod, v.DownwardAPI.Items, modeOr(v.DownwardAPI.DefaultMode), env)
	case v.Projected != nil:
		return b.projectedFiles(ctx, pod, v.Projected, env)
	}
	return nil, fmt.Errorf("not a file volume")
}

// projectedFiles merges the files of every source of a projected volume. Every source is
// tried and every failure reported, as Kubernetes does.
func (b Builder) projectedFiles(ctx context.Context, pod *corev1.Pod, p *corev1.ProjectedVolumeSource, env Env) (map[string]atomicdir.File, error) {
	mode := modeOr(p.DefaultMode)
	out := map[string]atomicdir.File{}
	var errs []error
	for _, src := range p.Sources {
		var files map[string]atomicdir.File
		var err error
		switch {
		case src.ConfigMap != nil:
			s := src.ConfigMap
			files, err = b.configMapFiles(ctx, pod.Namespace, s.Name, s.Items, optional(s.Optional), mode)
		case src.Secret != nil:
			s := src.Secret
			files, err = b.secretFiles(ctx, pod.Namespace, s.Name, s.Items, optional(s.Optional), mode)
		case src.DownwardAPI != nil:
			files, err = b.downwardFiles(pod, src.DownwardAPI.Items, mode, env)
		case src.ServiceAccountToken != nil:
			files, err = b.tokenFiles(ctx, pod, src.ServiceAccountToken, mode)
		default:
			err = errors.New("unsupported projected volume source")
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for p, f := range files {
			out[p] = f
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// tokenFiles asks for a token bound to the pod, for its ServiceAccount and the projection's
// audience (none means the API's own) and lifetime.
func (b Builder) tokenFiles(ctx context.Context, pod *corev1.Pod, tp *corev1.ServiceAccountTokenProjection, mode int32) (map[string]atomicdir.File, error) {
	if b.Tokens == nil {
		return nil, errors.New("serviceAccountToken: no token source configured")
	}
	if pod.Spec.ServiceAccountName == "" {
		return nil, errors.New("serviceAccountToken: the pod has no serviceAccountName")
	}
	var audiences []string
	if tp.Audience != "" {
		audiences = []string{tp.Audience}
	}
	seconds := defaultTokenSeconds
	if tp.ExpirationSeconds != nil {
		seconds = *tp.ExpirationSeconds
	}
	tr, err := b.Tokens.GetServiceAccountToken(ctx, pod.Namespace, pod.Spec.ServiceAccountName, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: &seconds,
			BoundObjectRef:    &authnv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		},
	})
	if err != nil {
		return nil, err
	}
	return map[string]atomicdir.File{tp.Path: {Data: []byte(tr.Status.Token), Mode: os.FileMode(mode)}}, nil
}

// configMapFiles is a ConfigMap's keys as files. A missing ConfigMap is no error when
// optional (the volume is empty); any other failure is, so that a rewrite never empties a
// volume for a passing error.
func (b Builder) configMapFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, opt bool, mode int32) (map[string]atomicdir.File, error) {
	cm, err := b.configMap(ctx, ns, name)
	if err != nil {
		if !opt || !errors.Is(err, apierror.ErrNotFound) {
			return nil, err
		}
		cm = &corev1.ConfigMap{}
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(data, items, opt, mode, "configmap references non-existent config key: %s")
}

// secretFiles is a Secret's keys as files; see configMapFiles.
func (b Builder) secretFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, opt bool, mode int32) (map[string]atomicdir.File, error) {
	s, err := b.secret(ctx, ns, name)
	if err != nil {
		if !opt || !errors.Is(err, apierror.ErrNotFound) {
			return nil, err
		}
		s = &corev1.Secret{}
	}
	return keyFiles(s.Data, items, opt, mode, "references non-existent secret key: %s")
}

// keyFiles maps keys to files: every key under its own name, or only the items listed under
// their paths and modes. A listed key that is missing fails the volume unless it is optional.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, opt bool, mode int32, missing string) (map[string]atomicdir.File, error) {
	out := make(map[string]atomicdir.File, len(data))
	if len(items) == 0 {
		for k, v := range data {
			out[k] = atomicdir.File{Data: v, Mode: os.FileMode(mode)}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if opt {
				continue
			}
			return nil, fmt.Errorf(missing, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = *it.Mode
		}
		out[it.Path] = atomicdir.File{Data: v, Mode: os.FileMode(m)}
	}
	return out, nil
}

// downwardFiles is the pod's own fields and its containers' resources as files.
func (b Builder) downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, mode int32, env Env) (map[string]atomicdir.File, error) {
	out := make(map[string]atomicdir.File, len(items))
	var errs []error
	for _, it := range items {
		m := mode
		if it.Mode != nil {
			m = *it.Mode
		}
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = volumeFieldValue(pod, it.FieldRef.FieldPath, env)
		case it.ResourceFieldRef != nil:
			value, err = b.podResourceValue(pod, it.ResourceFieldRef)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[filepath.Clean(it.Path)] = atomicdir.File{Data: []byte(value), Mode: os.FileMode(m)}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func modeOr(p *int32) int32 {
	if p == nil {
		return defaultMode
	}
	return *p
}
