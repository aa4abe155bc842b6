package registry

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

// Pods get their ServiceAccount's token volume as Kubernetes' admission gives it, unless the
// pod or else the account says not to; a missing account is refused with Kubernetes' words.
func TestServiceAccountAdmission(t *testing.T) {
	r := newTestRegistry(t)
	sas, pods := resource(t, "serviceaccounts"), resource(t, "pods")
	no, yes := false, true
	mustCreate(t, r, sas, "default", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: &no})
	mustCreate(t, r, sas, "default", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "puller"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}})

	type want struct {
		Mounts      []string // the containers that mount the token path, init containers first
		Volume      bool
		PullSecrets []string
	}
	cases := []struct {
		name string
		pod  func(*corev1.Pod)
		want want
	}{
		{"default account mounts everywhere", func(*corev1.Pod) {}, want{Mounts: []string{"init", "app", "side"}, Volume: true}},
		{"pod switches it off", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = &no }, want{}},
		{"account switches it off", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "quiet" }, want{}},
		{"pod overrides the account", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "quiet"; p.Spec.AutomountServiceAccountToken = &yes },
			want{Mounts: []string{"init", "app", "side"}, Volume: true}},
		{"a container with its own mount there keeps it", func(p *corev1.Pod) {
			p.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: TokenMountPath}}
			p.Spec.Volumes = []corev1.Volume{{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, want{Mounts: []string{"init", "app"}, Volume: true}},
		{"pull secrets lent", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "puller" },
			want{Mounts: []string{"init", "app", "side"}, Volume: true, PullSecrets: []string{"regcred"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "p-"}, Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
				Containers:     []corev1.Container{{Name: "app", Image: "busybox"}, {Name: "side", Image: "busybox"}},
			}}
			tc.pod(pod)
			got := mustCreate(t, r, pods, "default", pod).(*corev1.Pod)
			var g want
			vol := ""
			for _, c := range append(append([]corev1.Container{}, got.Spec.InitContainers...), got.Spec.Containers...) {
				for _, m := range c.VolumeMounts {
					if m.MountPath == TokenMountPath && m.Name != "mine" {
						if !m.ReadOnly {
							t.Errorf("container %s mounts the token read-write", c.Name)
						}
						g.Mounts, vol = append(g.Mounts, c.Name), m.Name
					}
				}
			}
			for _, v := range got.Spec.Volumes {
				if v.Name == vol && v.Projected != nil {
					g.Volume = true
					checkTokenVolume(t, v)
				}
			}
			for _, s := range got.Spec.ImagePullSecrets {
				g.PullSecrets = append(g.PullSecrets, s.Name)
			}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Fatalf("admitted pod (-want +got):\n%s", diff)
			}
		})
	}

	_, err := r.Create(t.Context(), Key{Resource: pods, Namespace: "default"}, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lost"},
		Spec: corev1.PodSpec{ServiceAccountName: "missing", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, false)
	var apiErr *apierror.Error
	if !errors.As(err, &apiErr) || apiErr.Status.Code != http.StatusForbidden ||
		apiErr.Status.Message != `pods "lost" is forbidden: error looking up service account default/missing: serviceaccount "missing" not found` {
		t.Fatalf("pod with a missing account: %v", err)
	}
}

func checkTokenVolume(t *testing.T, v corev1.Volume) {
	t.Helper()
	if len(v.Name) != len(TokenVolumePrefix)+5 || v.Name[:len(TokenVolumePrefix)] != TokenVolumePrefix {
		t.Errorf("volume name %q", v.Name)
	}
	src := v.Projected.Sources
	if len(src) != 3 || src[0].ServiceAccountToken == nil || src[0].ServiceAccountToken.Path != "token" ||
		src[1].ConfigMap == nil || src[1].ConfigMap.Name != RootCAConfigMap || src[1].ConfigMap.Items[0].Path != "ca.crt" ||
		src[2].DownwardAPI == nil || src[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("volume sources %+v", src)
	}
}
