package serviceaccount

import (
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Ref names an object a token is bound to; the uid tells a recreated object from the original.
type Ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Claims are what a token asserts. Subject, issuer and nbf are derived when it is signed: the
// subject from the ServiceAccount, the issuer from the Signer, nbf equal to IssuedAt.
type Claims struct {
	Namespace      string
	ServiceAccount Ref
	// At most one of Pod, Secret and Node-without-Pod: a pod-bound token also names the
	// pod's node, for information only.
	Pod    *Ref
	Secret *Ref
	Node   *Ref

	Audiences []string
	IssuedAt  time.Time
	NotBefore time.Time
	Expiry    time.Time
	// ID is the jti; the Signer makes a random one when empty.
	ID string
}

// Bound are the objects a token is bound to, looked up from a TokenRequest's boundObjectRef.
// For a Pod, Node is the node it runs on when known, or a Node carrying only the pod's
// spec.nodeName when that node cannot be found.
type Bound struct {
	Pod    *corev1.Pod
	Secret *corev1.Secret
	Node   *corev1.Node
}

// NewClaims are the claims of a token for sa, bound as given, valid from now for lifetime.
func NewClaims(sa *corev1.ServiceAccount, bound Bound, audiences []string, lifetime time.Duration, now time.Time) (*Claims, error) {
	if bound.Secret != nil && (bound.Pod != nil || bound.Node != nil) {
		return nil, errors.New("token can only be bound to one object type")
	}
	now = now.Truncate(time.Second)
	c := &Claims{
		Namespace:      sa.Namespace,
		ServiceAccount: Ref{Name: sa.Name, UID: string(sa.UID)},
		Audiences:      audiences,
		IssuedAt:       now,
		NotBefore:      now,
		Expiry:         now.Add(lifetime),
	}
	switch {
	case bound.Pod != nil:
		c.Pod = &Ref{Name: bound.Pod.Name, UID: string(bound.Pod.UID)}
		if bound.Node != nil {
			c.Node = &Ref{Name: bound.Node.Name, UID: string(bound.Node.UID)}
		}
	case bound.Secret != nil:
		c.Secret = &Ref{Name: bound.Secret.Name, UID: string(bound.Secret.UID)}
	case bound.Node != nil:
		c.Node = &Ref{Name: bound.Node.Name, UID: string(bound.Node.UID)}
	}
	return c, nil
}

// kubernetesClaim is the private "kubernetes.io" claim, spelled as Kubernetes writes it.
type kubernetesClaim struct {
	Namespace      string `json:"namespace,omitempty"`
	ServiceAccount Ref    `json:"serviceaccount,omitempty"`
	Pod            *Ref   `json:"pod,omitempty"`
	Secret         *Ref   `json:"secret,omitempty"`
	Node           *Ref   `json:"node,omitempty"`
	// WarnAfter is read so tokens from a Kubernetes apiserver sharing the key parse; it is
	// never written here.
	WarnAfter *int64 `json:"warnafter,omitempty"`
}

// payload is the signed JSON. Fields are in the order encoding a map gives, as Kubernetes'
// tokens have them; aud is always an array there, even with one audience.
type payload struct {
	Audience   []string        `json:"aud,omitempty"`
	Expiry     int64           `json:"exp"`
	IssuedAt   int64           `json:"iat"`
	Issuer     string          `json:"iss"`
	ID         string          `json:"jti,omitempty"`
	Kubernetes kubernetesClaim `json:"kubernetes.io"`
	NotBefore  int64           `json:"nbf"`
	Subject    string          `json:"sub"`
}

func (c *Claims) payload(issuer string) payload {
	return payload{
		Audience:  c.Audiences,
		Expiry:    c.Expiry.Unix(),
		IssuedAt:  c.IssuedAt.Unix(),
		Issuer:    issuer,
		ID:        c.ID,
		NotBefore: c.NotBefore.Unix(),
		Subject:   Username(c.Namespace, c.ServiceAccount.Name),
		Kubernetes: kubernetesClaim{
			Namespace:      c.Namespace,
			ServiceAccount: c.ServiceAccount,
			Pod:            c.Pod,
			Secret:         c.Secret,
			Node:           c.Node,
		},
	}
}
