package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/volume"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// TestVolumeBinder runs the PersistentVolume binder against a real apiserver and RabbitMQ:
// the default class, static binding (smallest fit, class, selector), provisioning into a
// directory, reclaim Delete and Retain, and the event of a claim that cannot bind.
func TestVolumeBinder(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	pvs := client.MustFor[*corev1.PersistentVolume, *corev1.PersistentVolumeList](admin)
	pvcs := client.MustFor[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList](admin)
	classes := client.MustFor[*storagev1.StorageClass, *storagev1.StorageClassList](admin)
	events := client.MustFor[*corev1.Event, *corev1.EventList](admin)
	root := t.TempDir()
	const ns = "default"

	runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-volumes",
		Controllers: []string{"persistentvolume-binder"}, PVRoot: root, DefaultStorageClass: "standard",
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.DiscardHandler))

	ctx := t.Context()
	claim := func(name, size string, class *string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		if len(modes) == 0 {
			modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		}
		c, err := pvcs.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: modes, StorageClassName: class,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	staticPV := func(name, size, class string, labels map[string]string) {
		_, err := pvs.Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName:       class,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(root, "static-"+name)}},
			}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	boundTo := func(name string) string {
		var vol string
		waitUntil(t, "claim "+name+" bound", func(ctx context.Context) (bool, error) {
			c, err := pvcs.Get(ctx, ns, name, metav1.GetOptions{})
			if err != nil || c.Status.Phase != corev1.ClaimBound {
				return false, err
			}
			pv, err := pvs.Get(ctx, "", c.Spec.VolumeName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			vol = pv.Name
			return pv.Status.Phase == corev1.VolumeBound && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID == c.UID &&
				c.Status.Capacity.Storage().Equal(*pv.Spec.Capacity.Storage()), nil
		})
		return vol
	}
	empty := ""

	t.Run("default class made", func(t *testing.T) {
		waitUntil(t, "storageclass standard", func(ctx context.Context) (bool, error) {
			sc, err := classes.Get(ctx, "", "standard", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return sc.Provisioner == volume.DefaultProvisioner && volume.IsDefaultClass(sc), nil
		})
	})

	t.Run("static: smallest fit of the class and selector", func(t *testing.T) {
		staticPV("small", "1Gi", "", nil)
		staticPV("gold-big", "10Gi", "", map[string]string{"tier": "gold"})
		staticPV("gold-fit", "3Gi", "", map[string]string{"tier": "gold"})
		staticPV("classy", "2Gi", "fast", map[string]string{"tier": "gold"})
		// The binder marks a volume Available once it has seen it; a claim made before it has
		// seen them all could rightly bind to another.
		for _, name := range []string{"small", "gold-big", "gold-fit", "classy"} {
			waitUntil(t, "volume "+name+" Available", func(ctx context.Context) (bool, error) {
				pv, err := pvs.Get(ctx, "", name, metav1.GetOptions{})
				return err == nil && pv.Status.Phase == corev1.VolumeAvailable, err
			})
		}
		c := claim("plain", "1Gi", &empty)
		if got := boundTo(c.Name); got != "small" {
			t.Errorf("plain bound to %s, want small", got)
		}
		_, err := pvcs.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "gold", Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &empty,
				Selector:  &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := boundTo("gold"); got != "gold-fit" {
			t.Errorf("gold bound to %s, want gold-fit", got)
		}
	})

	var dynDir string
	t.Run("dynamic: default class provisions a directory", func(t *testing.T) {
		c := claim("dyn", "2Gi", nil, corev1.ReadWriteMany)
		name := boundTo(c.Name)
		pv, err := pvs.Get(ctx, "", name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := pvcs.Get(ctx, ns, c.Name, metav1.GetOptions{})
		if name != "pvc-"+string(c.UID) || pv.Spec.StorageClassName != "standard" || got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != "standard" ||
			pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
			t.Errorf("volume %s class %s policy %s; claim class %v", name, pv.Spec.StorageClassName, pv.Spec.PersistentVolumeReclaimPolicy, got.Spec.StorageClassName)
		}
		dynDir = pv.Spec.HostPath.Path
		if fi, err := os.Stat(dynDir); err != nil || !fi.IsDir() || filepath.Dir(dynDir) != root {
			t.Fatalf("volume directory %s: %v", dynDir, err)
		}
	})

	t.Run("reclaim Delete removes the volume and its directory", func(t *testing.T) {
		if dynDir == "" {
			t.Skip("no provisioned volume")
		}
		if err := os.WriteFile(filepath.Join(dynDir, "data"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		c, _ := pvcs.Get(ctx, ns, "dyn", metav1.GetOptions{})
		if err := pvcs.Delete(ctx, ns, "dyn", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "provisioned volume deleted", func(ctx context.Context) (bool, error) {
			_, err := pvs.Get(ctx, "", c.Spec.VolumeName, metav1.GetOptions{})
			return errors.Is(err, apierror.ErrNotFound), err
		})
		if _, err := os.Stat(dynDir); !os.IsNotExist(err) {
			t.Errorf("directory %s still there: %v", dynDir, err)
		}
	})

	t.Run("reclaim Retain releases the volume", func(t *testing.T) {
		if err := pvcs.Delete(ctx, ns, "plain", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "volume small Released", func(ctx context.Context) (bool, error) {
			pv, err := pvs.Get(ctx, "", "small", metav1.GetOptions{})
			return err == nil && pv.Status.Phase == corev1.VolumeReleased && pv.Spec.ClaimRef != nil, err
		})
		// A new claim of the same name does not get the released volume back: it takes the
		// only free one of its class left.
		claim("plain", "1Gi", &empty)
		if got := boundTo("plain"); got != "gold-big" {
			t.Errorf("new claim plain bound to %s, want gold-big", got)
		}
	})

	t.Run("a claim that cannot bind says why", func(t *testing.T) {
		staticPV("tiny", "1Gi", "", nil)
		t.Cleanup(func() {
			if !t.Failed() {
				return
			}
			list, _ := events.List(context.Background(), ns, metav1.ListOptions{})
			for _, e := range list.Items {
				t.Logf("event %s %s %s", e.InvolvedObject.Name, e.Reason, e.Message)
			}
		})
		claim("huge", "100Gi", &empty)
		waitUntil(t, "FailedBinding event on huge", func(ctx context.Context) (bool, error) {
			list, err := events.List(ctx, ns, metav1.ListOptions{FieldSelector: "involvedObject.name=huge"})
			if err != nil {
				return false, err
			}
			for _, e := range list.Items {
				if e.Reason == volume.ReasonFailedBinding && strings.Contains(e.Message, "1 too small") &&
					strings.Contains(e.Message, "1 of another storage class") && strings.Contains(e.Message, "3 bound to another claim") {
					return true, nil
				}
			}
			return false, nil
		})
		c, _ := pvcs.Get(ctx, ns, "huge", metav1.GetOptions{})
		if c.Status.Phase != corev1.ClaimPending {
			t.Errorf("phase %s, want Pending", c.Status.Phase)
		}
	})
}
