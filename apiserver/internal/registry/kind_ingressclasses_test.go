package registry

import (
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The default among several marked classes is the newest, then the first by name.
func TestDefaultIngressClass(t *testing.T) {
	at := func(name string, sec int) *networkingv1.IngressClass {
		return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(sec), 0))}}
	}
	cases := []struct {
		name   string
		marked []*networkingv1.IngressClass
		want   string
	}{
		{"none", nil, ""},
		{"one", []*networkingv1.IngressClass{at("a", 1)}, "a"},
		{"newest", []*networkingv1.IngressClass{at("old", 1), at("new", 5), at("mid", 3)}, "new"},
		{"same time, by name", []*networkingv1.IngressClass{at("b", 5), at("a", 5)}, "a"},
	}
	for _, tc := range cases {
		if got := DefaultIngressClass(tc.marked); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
