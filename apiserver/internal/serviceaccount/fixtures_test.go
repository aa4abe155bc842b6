package serviceaccount

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
)

// Test keys were made with openssl: sa.key as PKCS#1 (what bootstrap writes), other.key as
// PKCS#8 with a self-signed other.crt, ec.key an ECDSA key that must be refused.
func readKey(t *testing.T, name string) *rsa.PrivateKey {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParsePrivateKey(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return k
}

// t0 is the fixtures' issue time: whole seconds, as NumericDate keeps them.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newSigner(t *testing.T, issuer string, key *rsa.PrivateKey) *Signer {
	t.Helper()
	s, err := NewSigner(issuer, key)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	n := 0
	s.newID = func() string {
		n++
		return "jti-" + string(rune('0'+n))
	}
	return s
}

// objects is a Getter over maps keyed namespace/name (name alone for nodes).
type objects struct {
	sas     map[string]*corev1.ServiceAccount
	pods    map[string]*corev1.Pod
	secrets map[string]*corev1.Secret
	nodes   map[string]*corev1.Node
	nodeErr error // when set, every node lookup fails with it
}

func (o *objects) GetServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := o.sas[ns+"/"+name]; ok {
		return sa, nil
	}
	return nil, apierror.NotFound("", "serviceaccounts", name)
}

func (o *objects) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if p, ok := o.pods[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, apierror.NotFound("", "pods", name)
}

func (o *objects) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if s, ok := o.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierror.NotFound("", "secrets", name)
}

func (o *objects) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	if o.nodeErr != nil {
		return nil, o.nodeErr
	}
	if n, ok := o.nodes[name]; ok {
		return n, nil
	}
	return nil, apierror.NotFound("", "nodes", name)
}

func meta(ns, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}
}

// cluster is the fixture world: ServiceAccount ns1/robot, its pod web on node n1, a pod of
// another ServiceAccount, a secret and two nodes.
func cluster() *objects {
	return &objects{
		sas: map[string]*corev1.ServiceAccount{
			"ns1/robot": {ObjectMeta: meta("ns1", "robot", "sa-uid")},
		},
		pods: map[string]*corev1.Pod{
			"ns1/web":      {ObjectMeta: meta("ns1", "web", "pod-uid"), Spec: corev1.PodSpec{ServiceAccountName: "robot", NodeName: "n1"}},
			"ns1/pending":  {ObjectMeta: meta("ns1", "pending", "pending-uid"), Spec: corev1.PodSpec{ServiceAccountName: "robot"}},
			"ns1/orphaned": {ObjectMeta: meta("ns1", "orphaned", "orphaned-uid"), Spec: corev1.PodSpec{ServiceAccountName: "robot", NodeName: "gone"}},
			"ns1/db":       {ObjectMeta: meta("ns1", "db", "db-uid"), Spec: corev1.PodSpec{ServiceAccountName: "default"}},
		},
		secrets: map[string]*corev1.Secret{
			"ns1/creds": {ObjectMeta: meta("ns1", "creds", "secret-uid")},
		},
		nodes: map[string]*corev1.Node{
			"n1": {ObjectMeta: meta("", "n1", "node-uid")},
		},
	}
}

// decodeSegment returns a token's header (0) or payload (1) as generic JSON.
func decodeSegment(t *testing.T, token string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
