package registry

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/scheme"
)

// Answering from stored bytes must give exactly what decoding and re-encoding would.
func TestWithResourceVersionMatchesDecoding(t *testing.T) {
	res, _ := scheme.Lookup("configmaps")
	cases := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", Labels: map[string]string{"x": "y"}}, Data: map[string]string{"k": `"metadata":{`}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
	}
	for _, cm := range cases {
		stored, err := EncodeStored(cm, res)
		if err != nil {
			t.Fatal(err)
		}
		fast, ok := storage.WithResourceVersion(stored, 42)
		if !ok {
			t.Fatalf("stored form not recognised: %s", stored)
		}
		slow, err := DecodeStored(res, stored, 42)
		if err != nil {
			t.Fatal(err)
		}
		var a, b map[string]any
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("%s: %v", fast, err)
		}
		want, _ := json.Marshal(slow)
		_ = json.Unmarshal(want, &b)
		if diff := cmp.Diff(b, a); diff != "" {
			t.Fatalf("fast path differs (-decoded +fast):\n%s", diff)
		}
	}
	if _, ok := storage.WithResourceVersion([]byte(`{"metadata":{}}`), 1); ok {
		t.Fatal("accepted bytes not written by EncodeStored")
	}
}
