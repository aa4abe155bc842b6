package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultProvisioner is the provisioner name of directory-backed volumes on storage every
// node sees at the same path.
const DefaultProvisioner = "minik8s.io/hostpath-shared"

// VolumeName is the name of the volume provisioned for a claim, Kubernetes' "pvc-<uid>": one
// per claim, so a second create after a lost answer is AlreadyExists, not a second volume.
func VolumeName(c *corev1.PersistentVolumeClaim) string { return "pvc-" + string(c.UID) }

// ProvisionedVolume is the volume made for a claim of class: the claim's size and access
// modes, the class's reclaim policy and mount options, a hostPath directory under root, and a
// claimRef to the claim so that no other claim can take it.
func ProvisionedVolume(c *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, root string) *corev1.PersistentVolume {
	name := VolumeName(c)
	policy := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		policy = *sc.ReclaimPolicy
	}
	dirType := corev1.HostPathDirectory
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			AnnProvisionedBy:     sc.Provisioner,
			AnnBoundByController: "yes",
		}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: c.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   c.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              sc.Name,
			MountOptions:                  sc.MountOptions,
			VolumeMode:                    c.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: c.Namespace, Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				// Named as NFS subdirectory provisioners name theirs, so people can tell them apart.
				Path: filepath.Join(root, c.Namespace+"-"+c.Name+"-"+name),
				Type: &dirType,
			}},
		},
	}
}

// Dirs makes and removes the directories of provisioned volumes under Root, which must be
// the same path on every node (a shared directory on one machine, an NFS mount on several).
type Dirs struct{ Root string }

// Make creates a volume's directory, writable by any user as containers may run as any.
func (d Dirs) Make(pv *corev1.PersistentVolume) error {
	dir, err := d.dir(pv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("make volume directory: %w", err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return fmt.Errorf("make volume directory: %w", err)
	}
	return nil
}

// Remove deletes a volume's directory and everything in it; a missing one is not an error.
func (d Dirs) Remove(pv *corev1.PersistentVolume) error {
	dir, err := d.dir(pv)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove volume directory: %w", err)
	}
	return nil
}

// dir is the volume's directory, refused unless it lies strictly under Root: the path comes
// from an object anyone with write access to volumes may have edited.
func (d Dirs) dir(pv *corev1.PersistentVolume) (string, error) {
	if pv.Spec.HostPath == nil {
		return "", errors.New("volume has no hostPath")
	}
	if d.Root == "" {
		return "", errors.New("no volume root configured")
	}
	root, dir := filepath.Clean(d.Root), filepath.Clean(pv.Spec.HostPath.Path)
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, "/") {
		return "", fmt.Errorf("volume path %s is not a directory directly under %s", dir, root)
	}
	return dir, nil
}
