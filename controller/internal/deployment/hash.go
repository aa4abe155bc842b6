package deployment

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// HashLabel is the label that ties a ReplicaSet and its pods to one template of a Deployment.
const HashLabel = appsDefaultDeploymentUniqueLabelKey

const appsDefaultDeploymentUniqueLabelKey = "pod-template-hash"

// TemplateHash is the pod-template-hash of template as Kubernetes computes it: FNV-32a over the
// template dumped with its fields in order (k8s.io/utils/dump.ForHash), then the collision
// count as 8 little-endian bytes when set, printed in decimal and spelled in the alphabet of
// names (no vowels, so no words). The same template therefore gets the same ReplicaSet name
// here as in a Kubernetes cluster of the same API version.
func TemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// EqualIgnoreHash reports whether two templates are the same once the hash label is left out:
// whether a ReplicaSet runs a Deployment's current template.
func EqualIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, HashLabel)
	delete(b.Labels, HashLabel)
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	return apiequality.Semantic.DeepEqual(a, b)
}
