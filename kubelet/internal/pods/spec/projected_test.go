package spec

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/shared/apierror"
)

// objects is a Lookup over fixed ConfigMaps and Secrets; "broken" fails as the API would when
// unreachable, anything else unknown is NotFound.
type objects struct {
	lookup
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (o objects) ConfigMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	if name == "broken" {
		return nil, errors.New("connection refused")
	}
	if cm, ok := o.cms[name]; ok {
		return cm, nil
	}
	return nil, apierror.NotFound("", "configmaps", name)
}

func (o objects) Secret(_ context.Context, _, name string) (*corev1.Secret, error) {
	if s, ok := o.secrets[name]; ok {
		return s, nil
	}
	return nil, apierror.NotFound("", "secrets", name)
}

func testObjects() objects {
	return objects{
		cms: map[string]*corev1.ConfigMap{
			"cfg":              {Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"bin": {0, 1}}},
			"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA"}},
		},
		secrets: map[string]*corev1.Secret{"s": {Data: map[string][]byte{"user": []byte("admin"), "pw": []byte("hunter2")}}},
	}
}

// fakeTokens records what it was asked and answers with a token naming the audiences.
type fakeTokens struct {
	asked []authnv1.TokenRequest
	err   error
}

func (f *fakeTokens) GetServiceAccountToken(_ context.Context, namespace, name string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	f.asked = append(f.asked, *req)
	if f.err != nil {
		return nil, f.err
	}
	out := req.DeepCopy()
	out.Status.Token = "token-of-" + namespace + "/" + name
	for _, a := range req.Spec.Audiences {
		out.Status.Token += "-for-" + a
	}
	return out, nil
}

// volumeContent reads a written volume as its current data directory holds it.
func volumeContent(t *testing.T, dir string) (map[string]string, map[string]os.FileMode) {
	t.Helper()
	data, err := filepath.EvalSymlinks(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatalf("volume %s has no data: %v", dir, err)
	}
	files, modes := map[string]string{}, map[string]os.FileMode{}
	err = filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(data, path)
		// Read through the visible name, as a container does.
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		fi, err := os.Stat(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		files[rel], modes[rel] = string(b), fi.Mode().Perm()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, modes
}

func ptr[T any](v T) *T { return &v }

func TestFileVolumes(t *testing.T) {
	cmRef := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	field := func(path string) *corev1.ObjectFieldSelector { return &corev1.ObjectFieldSelector{FieldPath: path} }
	q := resource.MustParse
	tests := []struct {
		name   string
		source corev1.VolumeSource
		tokens *fakeTokens
		files  map[string]string
		modes  map[string]os.FileMode
		err    string
		// asked is what the token source was asked, when it is given.
		asked []authnv1.TokenRequest
	}{
		{
			name:   "configMap: every key, text and binary, with defaultMode",
			source: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("cfg"), DefaultMode: ptr[int32](0o400)}},
			files:  map[string]string{"a": "1", "b": "2", "bin": "\x00\x01"},
			modes:  map[string]os.FileMode{"a": 0o400, "b": 0o400, "bin": 0o400},
		},
		{
			name: "configMap: items under their paths and modes",
			source: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("cfg"), Items: []corev1.KeyToPath{
				{Key: "a", Path: "conf/a.txt", Mode: ptr[int32](0o600)}, {Key: "bin", Path: "bin.dat"}}}},
			files: map[string]string{"conf/a.txt": "1", "bin.dat": "\x00\x01"},
			modes: map[string]os.FileMode{"conf/a.txt": 0o600, "bin.dat": 0o644},
		},
		{
			name: "configMap: a missing key fails",
			source: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("cfg"), Items: []corev1.KeyToPath{
				{Key: "a", Path: "a"}, {Key: "nope", Path: "nope"}}}},
			err: "volume v: configmap references non-existent config key: nope",
		},
		{
			name: "configMap: a missing key of an optional one is left out",
			source: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("cfg"), Optional: ptr(true), Items: []corev1.KeyToPath{
				{Key: "a", Path: "a"}, {Key: "nope", Path: "nope"}}}},
			files: map[string]string{"a": "1"},
			modes: map[string]os.FileMode{"a": 0o644},
		},
		{
			name:   "configMap: a missing optional one is an empty volume",
			source: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("gone"), Optional: ptr(true)}},
			files:  map[string]string{},
			modes:  map[string]os.FileMode{},
		},
		{
			name:   "configMap: a missing one fails",
			source: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("gone")}},
			err:    `volume v: configmap default/gone: configmaps "gone" not found`,
		},
		{
			name:   "configMap: an unreadable optional one fails rather than empty the volume",
			source: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("broken"), Optional: ptr(true)}},
			err:    "volume v: configmap default/broken: connection refused",
		},
		{
			name: "secret: items and defaultMode",
			source: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr[int32](0o440), Items: []corev1.KeyToPath{
				{Key: "pw", Path: "password"}}}},
			files: map[string]string{"password": "hunter2"},
			modes: map[string]os.FileMode{"password": 0o440},
		},
		{
			name: "secret: a missing key fails",
			source: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", Items: []corev1.KeyToPath{
				{Key: "token", Path: "token"}}}},
			err: "volume v: references non-existent secret key: token",
		},
		{
			name:   "secret: a missing optional one is an empty volume",
			source: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "gone", Optional: ptr(true)}},
			files:  map[string]string{},
			modes:  map[string]os.FileMode{},
		},
		{
			name: "downwardAPI: fields and resources",
			source: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: field("metadata.name")},
				{Path: "namespace", FieldRef: field("metadata.namespace")},
				{Path: "uid", FieldRef: field("metadata.uid")},
				{Path: "labels", FieldRef: field("metadata.labels")},
				{Path: "annotations", FieldRef: field("metadata.annotations"), Mode: ptr[int32](0o600)},
				{Path: "tier", FieldRef: field("metadata.labels['tier']")},
				{Path: "node", FieldRef: field("spec.nodeName")},
				{Path: "sa", FieldRef: field("spec.serviceAccountName")},
				{Path: "ip/pod", FieldRef: field("status.podIP")},
				{Path: "ip/host", FieldRef: field("status.hostIP")},
				{Path: "cpu_limit_m", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: q("1m")}},
				{Path: "cpu_request", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "requests.cpu"}},
				{Path: "mem_limit_mi", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: q("1Mi")}},
				{Path: "sidecar_mem_limit", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "sidecar", Resource: "limits.memory"}},
			}}},
			files: map[string]string{
				"name": "web", "namespace": "default", "uid": "u1",
				"labels":      "app=\"web\"\ntier=\"front\"",
				"annotations": `note="say \"hi\""`,
				"tier":        "front", "node": "n1", "sa": "robot", "ip/pod": "10.244.0.5", "ip/host": "192.168.1.2",
				"cpu_limit_m": "500", "cpu_request": "1", "mem_limit_mi": "64",
				// No limit of its own: the node's allocatable.
				"sidecar_mem_limit": "8589934592",
			},
			modes: map[string]os.FileMode{
				"name": 0o644, "namespace": 0o644, "uid": 0o644, "labels": 0o644, "annotations": 0o600, "tier": 0o644, "node": 0o644,
				"sa": 0o644, "ip/pod": 0o644, "ip/host": 0o644, "cpu_limit_m": 0o644, "cpu_request": 0o644, "mem_limit_mi": 0o644,
				"sidecar_mem_limit": 0o644,
			},
		},
		{
			name: "downwardAPI: an unknown container fails",
			source: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "x", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "ghost", Resource: "limits.cpu"}}}}},
			err: "volume v: container ghost not found",
		},
		{
			name: "projected: the ServiceAccount volume Kubernetes' admission adds",
			source: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr[int32](0o644), Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr[int64](3607), Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: cmRef("kube-root-ca.crt"), Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: field("metadata.namespace")}}}},
			}}},
			tokens: &fakeTokens{},
			files:  map[string]string{"token": "token-of-default/robot", "ca.crt": "CA", "namespace": "default"},
			modes:  map[string]os.FileMode{"token": 0o644, "ca.crt": 0o644, "namespace": 0o644},
			asked: []authnv1.TokenRequest{{Spec: authnv1.TokenRequestSpec{
				ExpirationSeconds: ptr[int64](3607),
				BoundObjectRef:    &authnv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "u1"},
			}}},
		},
		{
			name: "projected: a token's audience, default lifetime, path; secret items; defaultMode",
			source: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr[int32](0o400), Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "vault/token"}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: cmRef("s"), Items: []corev1.KeyToPath{{Key: "user", Path: "vault/user", Mode: ptr[int32](0o444)}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: cmRef("gone"), Optional: ptr(true)}},
			}}},
			tokens: &fakeTokens{},
			files:  map[string]string{"vault/token": "token-of-default/robot-for-vault", "vault/user": "admin"},
			modes:  map[string]os.FileMode{"vault/token": 0o400, "vault/user": 0o444},
			asked: []authnv1.TokenRequest{{Spec: authnv1.TokenRequestSpec{
				Audiences:         []string{"vault"},
				ExpirationSeconds: ptr[int64](3600),
				BoundObjectRef:    &authnv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "u1"},
			}}},
		},
		{
			name: "projected: every failing source is reported",
			source: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: cmRef("gone")}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: cmRef("cfg")}},
			}}},
			tokens: &fakeTokens{err: errors.New("failed to fetch token: forbidden")},
			err:    "volume v: failed to fetch token: forbidden\nconfigmap default/gone: configmaps \"gone\" not found",
		},
		{
			name: "projected: a token without a token source fails",
			source: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}},
			err: "volume v: serviceAccountToken: no token source configured",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pod()
			p.Labels["tier"] = "front"
			p.Annotations = map[string]string{"note": `say "hi"`}
			p.Spec.ServiceAccountName = "robot"
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("64Mi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("250m")},
			}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "s"})
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: tt.source}}
			b := Builder{RootDir: t.TempDir(), Lookup: testObjects(),
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("8Gi")}}
			if tt.tokens != nil {
				b.Tokens = tt.tokens
			}
			vols, err := b.Volumes(t.Context(), p, Env{PodIP: "10.244.0.5", HostIP: "192.168.1.2"})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Volumes: err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Volumes: %v", err)
			}
			files, modes := volumeContent(t, vols["v"])
			if d := cmp.Diff(tt.files, files); d != "" {
				t.Errorf("files (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.modes, modes); d != "" {
				t.Errorf("modes (-want +got):\n%s", d)
			}
			if tt.tokens != nil {
				if d := cmp.Diff(tt.asked, tt.tokens.asked); d != "" {
					t.Errorf("token requests (-want +got):\n%s", d)
				}
			}
		})
	}
}

// rotatingTokens hands out a new token on every call.
type rotatingTokens struct{ n int }

func (r *rotatingTokens) GetServiceAccountToken(_ context.Context, _, _ string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	r.n++
	out := req.DeepCopy()
	out.Status = authnv1.TokenRequestStatus{Token: "t" + string(rune('0'+r.n)), ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}
	return out, nil
}

func TestRefreshVolumes(t *testing.T) {
	p := pod()
	p.Spec.ServiceAccountName = "default"
	p.Spec.Volumes = []corev1.Volume{
		{Name: "api", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	objs := testObjects()
	b := Builder{RootDir: t.TempDir(), Lookup: objs, Tokens: &rotatingTokens{}}
	vols, err := b.Volumes(t.Context(), p, Env{})
	if err != nil {
		t.Fatal(err)
	}
	// The ConfigMap loses a key and changes another; the token source has a new token.
	objs.cms["cfg"] = &corev1.ConfigMap{Data: map[string]string{"a": "one"}}
	if err := b.RefreshVolumes(t.Context(), p, Env{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{"api": {"token": "t2"}, "cfg": {"a": "one"}}
	got := map[string]map[string]string{}
	for _, name := range []string{"api", "cfg"} {
		got[name], _ = volumeContent(t, vols[name])
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("after refresh (-want +got):\n%s", d)
	}
	if _, err := os.Lstat(filepath.Join(vols["cfg"], "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the removed key b is still visible: %v", err)
	}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "api", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"},
		{Name: "cfg", MountPath: "/etc/app/a", SubPath: "a"},
		{Name: "scratch", MountPath: "/scratch"},
	}
	cfg, err := b.Container(t.Context(), p, &p.Spec.Containers[0], "sb", 0, Env{}, vols)
	if err != nil {
		t.Fatal(err)
	}
	wantMounts := []runtime.Mount{
		{HostPath: vols["api"], ContainerPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		{HostPath: filepath.Join(vols["cfg"], "a"), ContainerPath: "/etc/app/a", ReadOnly: true},
		{HostPath: vols["scratch"], ContainerPath: "/scratch"},
	}
	if d := cmp.Diff(wantMounts, cfg.Mounts); d != "" {
		t.Errorf("mounts: file volumes are read-only, a subPath may be a key's file (-want +got):\n%s", d)
	}

	// A source that fails leaves the volume as it was.
	delete(objs.cms, "cfg")
	err = b.RefreshVolumes(t.Context(), p, Env{})
	if want := `volume cfg: configmap default/cfg: configmaps "cfg" not found`; err == nil || err.Error() != want {
		t.Fatalf("RefreshVolumes with the ConfigMap gone: %v, want %q", err, want)
	}
	if files, _ := volumeContent(t, vols["cfg"]); !cmp.Equal(files, map[string]string{"a": "one"}) {
		t.Errorf("cfg after a failed refresh = %v, want it unchanged", files)
	}
}
