package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// The kinds that configure pods.

var _ = register(Kind[*corev1.ConfigMap]{
	Resource:   served("configmaps"),
	Validation: validation.ConfigMap,
	Table:      tables.ConfigMap,
})

// Secrets are selectable by type.
var _ = register(Kind[*corev1.Secret]{
	Resource:     served("secrets"),
	Canonicalize: foldStringData,
	Default:      defaults.Secret,
	Validation:   validation.Secret,
	Fields:       func(sec *corev1.Secret) fields.Set { return fields.Set{"type": string(sec.Type)} },
	Table:        tables.Secret,
})

// foldStringData: a Secret's stringData is write-only, merged into data (stringData wins) and
// never stored, as Kubernetes does on decode.
func foldStringData(sec *corev1.Secret) {
	if len(sec.StringData) == 0 {
		return
	}
	if sec.Data == nil {
		sec.Data = make(map[string][]byte, len(sec.StringData))
	}
	for k, v := range sec.StringData {
		sec.Data[k] = []byte(v)
	}
	sec.StringData = nil
}

var _ = register(Kind[*corev1.ServiceAccount]{
	Resource:   served("serviceaccounts"),
	Validation: validation.ServiceAccount,
	Table:      tables.ServiceAccount,
})
