package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// callError is a webhook that could not be called, or answered nonsense: the failure policy
// decides whether the write goes on.
type callError struct {
	hook string
	err  error
}

func (e *callError) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.hook, e.err)
}

func (e *callError) Unwrap() error { return e.err }

// maxResponseBytes bounds what is read of a webhook's answer.
const maxResponseBytes = 3 << 20

// review is what every webhook is told about one write: the request with the objects already
// encoded, and a fresh uid stamped per call.
type review struct {
	req admissionv1.AdmissionRequest
}

var reviewGVK = admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")

// newReview encodes a write for webhooks.
func newReview(a *Attributes) (*review, error) {
	r := &review{req: admissionv1.AdmissionRequest{
		Kind:               metav1.GroupVersionKind(a.Kind),
		Resource:           metav1.GroupVersionResource(a.Resource),
		SubResource:        a.Subresource,
		RequestKind:        ptr(metav1.GroupVersionKind(a.RequestKind)),
		RequestResource:    ptr(metav1.GroupVersionResource(a.RequestResource)),
		RequestSubResource: a.Subresource,
		Name:               a.Name,
		Namespace:          a.Namespace,
		Operation:          a.Operation,
		UserInfo:           a.User,
		DryRun:             ptr(a.DryRun),
	}}
	var err error
	if r.req.Object.Raw, err = encodeObject(a.Object, a.Kind); err != nil {
		return nil, err
	}
	if r.req.OldObject.Raw, err = encodeObject(a.OldObject, a.Kind); err != nil {
		return nil, err
	}
	r.req.Options.Raw, err = json.Marshal(options(a))
	return r, err
}

func ptr[T any](v T) *T { return &v }

// encodeObject is obj's JSON with its apiVersion and kind; nil for no object.
func encodeObject(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	if obj == nil {
		return nil, nil
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return json.Marshal(obj)
}

// options are the request's options as Kubernetes sends them: CreateOptions, UpdateOptions
// or DeleteOptions, with the dry run.
func options(a *Attributes) runtime.Object {
	var dry []string
	if a.DryRun {
		dry = []string{metav1.DryRunAll}
	}
	tm := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: kind}
	}
	switch a.Operation {
	case admissionv1.Create:
		return &metav1.CreateOptions{TypeMeta: tm("CreateOptions"), DryRun: dry}
	case admissionv1.Update:
		return &metav1.UpdateOptions{TypeMeta: tm("UpdateOptions"), DryRun: dry}
	}
	return &metav1.DeleteOptions{TypeMeta: tm("DeleteOptions"), DryRun: dry}
}

// caller sends AdmissionReviews, keeping one transport per CA bundle and server name so that
// connections to a webhook are reused.
type caller struct {
	src        Source
	mu         sync.Mutex
	transports map[transportKey]*http.Transport
}

type transportKey struct {
	ca         string
	serverName string
}

func (c *caller) transport(ca []byte, serverName string) (*http.Transport, error) {
	k := transportKey{string(ca), serverName}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.transports[k]; ok {
		return t, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("the caBundle holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	t := &http.Transport{TLSClientConfig: cfg, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second, ForceAttemptHTTP2: true}
	if c.transports == nil {
		c.transports = map[transportKey]*http.Transport{}
	}
	c.transports[k] = t
	return t, nil
}

// target is where h is reached: its URL, or one ready pod of its Service dialled directly with
// the Service's DNS name as the TLS server name.
func (c *caller) target(ctx context.Context, cc admissionregistrationv1.WebhookClientConfig) (*url.URL, string, error) {
	if cc.URL != nil {
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return nil, "", err
		}
		return u, u.Hostname(), nil
	}
	ref := cc.Service
	if ref == nil {
		return nil, "", errors.New("the webhook names neither a url nor a service")
	}
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	host, err := c.resolve(ctx, ref.Namespace, ref.Name, port)
	if err != nil {
		return nil, "", err
	}
	u := &url.URL{Scheme: "https", Host: host, Path: "/"}
	if ref.Path != nil && *ref.Path != "" {
		u.Path = *ref.Path
	}
	return u, ref.Name + "." + ref.Namespace + ".svc", nil
}

// resolve finds host:port of a ready endpoint of the Service's port: from its Endpoints, else
// its EndpointSlices. An ExternalName Service is its external name.
func (c *caller) resolve(ctx context.Context, namespace, name string, port int32) (string, error) {
	svc, err := c.src.Service(ctx, namespace, name)
	if err != nil {
		return "", fmt.Errorf("service %s/%s: %w", namespace, name, err)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port))), nil
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			sp = &svc.Spec.Ports[i]
			break
		}
	}
	if sp == nil {
		return "", fmt.Errorf("service %s/%s has no port %d", namespace, name, port)
	}
	ep, err := c.src.Endpoints(ctx, namespace, name)
	if err != nil {
		return "", fmt.Errorf("endpoints %s/%s: %w", namespace, name, err)
	}
	if host, ok := fromEndpoints(ep, sp); ok {
		return host, nil
	}
	slices, err := c.src.EndpointSlices(ctx, namespace, name)
	if err != nil {
		return "", fmt.Errorf("endpointslices of %s/%s: %w", namespace, name, err)
	}
	if host, ok := fromSlices(slices, sp); ok {
		return host, nil
	}
	return "", fmt.Errorf("service %s/%s has no ready endpoint for port %d", namespace, name, port)
}

// fromEndpoints picks the first ready address of the Endpoints' port that carries the name of
// the Service port sp: the endpoints controller names them so, whatever the target port.
func fromEndpoints(ep *corev1.Endpoints, sp *corev1.ServicePort) (string, bool) {
	if ep == nil {
		return "", false
	}
	for _, ss := range ep.Subsets {
		for _, p := range ss.Ports {
			if p.Name != sp.Name || len(ss.Addresses) == 0 {
				continue
			}
			return net.JoinHostPort(ss.Addresses[0].IP, strconv.Itoa(int(p.Port))), true
		}
	}
	return "", false
}

// fromSlices is fromEndpoints for EndpointSlices, whose endpoints say whether they are ready.
func fromSlices(slices []*discoveryv1.EndpointSlice, sp *corev1.ServicePort) (string, bool) {
	for _, s := range slices {
		for _, p := range s.Ports {
			pname := ""
			if p.Name != nil {
				pname = *p.Name
			}
			if p.Port == nil || pname != sp.Name {
				continue
			}
			for _, e := range s.Endpoints {
				if (e.Conditions.Ready == nil || *e.Conditions.Ready) && len(e.Addresses) > 0 {
					return net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*p.Port))), true
				}
			}
		}
	}
	return "", false
}

// call sends the review to h and returns its response, checked as Kubernetes checks it.
func (c *caller) call(ctx context.Context, h *hook, rv *review) (*admissionv1.AdmissionResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	u, serverName, err := c.target(ctx, h.clientConfig)
	if err != nil {
		return nil, &callError{h.name, err}
	}
	t, err := c.transport(h.clientConfig.CABundle, serverName)
	if err != nil {
		return nil, &callError{h.name, err}
	}
	uid := types.UID(uuid.NewUUID())
	req := rv.req
	req.UID = uid
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: reviewGVK.GroupVersion().String(), Kind: reviewGVK.Kind}, Request: &req})
	if err != nil {
		return nil, &callError{h.name, err}
	}
	q := u.Query()
	q.Set("timeout", strconv.Itoa(int(h.timeout/time.Second))+"s")
	u.RawQuery = q.Encode()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, &callError{h.name, err}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	resp, err := (&http.Client{Transport: t}).Do(hr)
	if err != nil {
		return nil, &callError{h.name, fmt.Errorf("failed to call webhook: %w", err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, &callError{h.name, fmt.Errorf("failed to call webhook: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &callError{h.name, fmt.Errorf("failed to call webhook: the server responded with the status code %d but did not return more information", resp.StatusCode)}
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, &callError{h.name, fmt.Errorf("failed to call webhook: %w", err)}
	}
	if err := verify(uid, &out); err != nil {
		return nil, &callError{h.name, err}
	}
	return out.Response, nil
}

// verify checks an answer as Kubernetes does: an admission.k8s.io/v1 AdmissionReview with a
// response for this call, and a patch only as a JSONPatch.
func verify(uid types.UID, out *admissionv1.AdmissionReview) error {
	if gvk := out.GroupVersionKind(); gvk != reviewGVK {
		return fmt.Errorf("expected webhook response of %v, got %v", reviewGVK, gvk)
	}
	if out.Response == nil {
		return errors.New("webhook response was absent")
	}
	if out.Response.UID != uid {
		return fmt.Errorf("expected response.uid=%q, got %q", uid, out.Response.UID)
	}
	if len(out.Response.Patch) > 0 {
		if out.Response.PatchType == nil {
			return errors.New("webhook returned response.patch but not response.patchType")
		}
		if *out.Response.PatchType != admissionv1.PatchTypeJSONPatch {
			return fmt.Errorf("webhook returned invalid response.patchType of %q", *out.Response.PatchType)
		}
	}
	return nil
}
