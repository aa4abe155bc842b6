package webhook

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/apiserver/internal/admission/webhook/webhooktest"
	"minik8s.io/shared/apierror"
)

// fakeSource serves fixed objects; counts says how often the configurations were listed.
type fakeSource struct {
	mu         sync.Mutex
	validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	mutating   []*admissionregistrationv1.MutatingWebhookConfiguration
	namespaces map[string]*corev1.Namespace
	services   map[string]*corev1.Service
	endpoints  map[string]*corev1.Endpoints
	slices     map[string][]*discoveryv1.EndpointSlice
	lists      int
}

func (f *fakeSource) ValidatingWebhookConfigurations(context.Context) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	return append([]*admissionregistrationv1.ValidatingWebhookConfiguration(nil), f.validating...), nil
}

func (f *fakeSource) MutatingWebhookConfigurations(context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*admissionregistrationv1.MutatingWebhookConfiguration(nil), f.mutating...), nil
}

func (f *fakeSource) Namespace(_ context.Context, name string) (*corev1.Namespace, error) {
	if ns, ok := f.namespaces[name]; ok {
		return ns, nil
	}
	return nil, apierror.NotFound("", "namespaces", name)
}

func (f *fakeSource) Service(_ context.Context, ns, name string) (*corev1.Service, error) {
	if s, ok := f.services[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierror.NotFound("", "services", name)
}

func (f *fakeSource) Endpoints(_ context.Context, ns, name string) (*corev1.Endpoints, error) {
	return f.endpoints[ns+"/"+name], nil
}

func (f *fakeSource) EndpointSlices(_ context.Context, ns, service string) ([]*discoveryv1.EndpointSlice, error) {
	return f.slices[ns+"/"+service], nil
}

var (
	fail   = admissionregistrationv1.Fail
	ignore = admissionregistrationv1.Ignore
	none   = admissionregistrationv1.SideEffectClassNone
	some   = admissionregistrationv1.SideEffectClassSome
)

func urlConfig(s *webhooktest.Server, path string) admissionregistrationv1.WebhookClientConfig {
	u := s.URL + path
	return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: s.CABundle}
}

func validating(name string, cc admissionregistrationv1.WebhookClientConfig, policy admissionregistrationv1.FailurePolicyType, side admissionregistrationv1.SideEffectClass, timeout int32) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: cc, FailurePolicy: &policy, SideEffects: &side, TimeoutSeconds: &timeout,
		Rules: []admissionregistrationv1.RuleWithOperations{rule(all, core, v1, []string{"pods"}, "")}, AdmissionReviewVersions: []string{"v1"}}
}

func podCreate(dry bool) *Attributes {
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	return &Attributes{Operation: admissionv1.Create, Kind: gvk, RequestKind: gvk, Resource: podsGVR, RequestResource: podsGVR,
		Namespaced: true, Namespace: "team-a", Name: "p", Object: pod("team-a", map[string]string{"app": "web"}), DryRun: dry,
		User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"devs"}}}
}

func deny(code int32, msg string) webhooktest.Decide {
	return func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Code: code, Message: msg}}
	}
}

// Validating webhooks judge a write as upstream's dispatcher: a refusal carries the webhook's
// message and code, a failed call fails closed or open by failurePolicy, a dry run is refused
// for webhooks with side effects, and a slow webhook times out.
func TestValidate(t *testing.T) {
	allowed := webhooktest.Start(t, func(r *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"looked at " + req.Name}}
	})
	denied := webhooktest.Start(t, deny(403, "no pods named p"))
	deniedBare := webhooktest.Start(t, deny(0, ""))
	slow := webhooktest.Start(t, func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		<-r.Context().Done()
		return nil
	})
	unreachable := "https://127.0.0.1:1/"
	cases := []struct {
		name      string
		hooks     []admissionregistrationv1.ValidatingWebhook
		dry       bool
		wantCode  int32 // 0: allowed
		wantMsg   string
		wantWarns []string
	}{
		{name: "allowed, with a warning", hooks: []admissionregistrationv1.ValidatingWebhook{validating("ok.example.com", urlConfig(allowed, "/"), fail, none, 5)},
			wantWarns: []string{"looked at p"}},
		{name: "denied", hooks: []admissionregistrationv1.ValidatingWebhook{validating("deny.example.com", urlConfig(denied, "/"), fail, none, 5)},
			wantCode: 403, wantMsg: `admission webhook "deny.example.com" denied the request: no pods named p`},
		{name: "denied without explanation", hooks: []admissionregistrationv1.ValidatingWebhook{validating("bare.example.com", urlConfig(deniedBare, "/"), fail, none, 5)},
			wantCode: 400, wantMsg: `admission webhook "bare.example.com" denied the request without explanation`},
		{name: "unreachable, failing closed", hooks: []admissionregistrationv1.ValidatingWebhook{validating("down.example.com", admissionregistrationv1.WebhookClientConfig{URL: &unreachable}, fail, none, 5)},
			wantCode: 500, wantMsg: `Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: Post`},
		{name: "unreachable, failing open", hooks: []admissionregistrationv1.ValidatingWebhook{validating("down.example.com", admissionregistrationv1.WebhookClientConfig{URL: &unreachable}, ignore, none, 5)}},
		{name: "untrusted certificate", hooks: []admissionregistrationv1.ValidatingWebhook{validating("ok.example.com", urlConfig(allowed, "/"), fail, none, 5)},
			wantCode: 500, wantMsg: `failed calling webhook "ok.example.com": failed to call webhook: Post`},
		{name: "timeout", hooks: []admissionregistrationv1.ValidatingWebhook{validating("slow.example.com", urlConfig(slow, "/"), fail, none, 1)},
			wantCode: 500, wantMsg: "context deadline exceeded"},
		{name: "dry run with side effects", dry: true, hooks: []admissionregistrationv1.ValidatingWebhook{validating("side.example.com", urlConfig(allowed, "/"), ignore, some, 5)},
			wantCode: 400, wantMsg: `admission webhook "side.example.com" does not support dry run`},
		{name: "dry run without side effects", dry: true, hooks: []admissionregistrationv1.ValidatingWebhook{validating("ok.example.com", urlConfig(allowed, "/"), fail, none, 5)},
			wantWarns: []string{"looked at p"}},
		{name: "one of several denies", hooks: []admissionregistrationv1.ValidatingWebhook{
			validating("ok.example.com", urlConfig(allowed, "/"), fail, none, 5), validating("deny.example.com", urlConfig(denied, "/"), fail, none, 5)},
			wantCode: 403, wantMsg: "no pods named p", wantWarns: []string{"looked at p"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "untrusted certificate" {
				tc.hooks[0].ClientConfig.CABundle = nil
			}
			src := &fakeSource{validating: []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: tc.hooks}}}
			p := New(Config{Source: src})
			var mu sync.Mutex
			var warns []string
			ctx := WithWarnings(t.Context(), func(m string) { mu.Lock(); warns = append(warns, m); mu.Unlock() })
			err := p.Validate(ctx, podCreate(tc.dry))
			code := int32(0)
			if err != nil {
				code = apierror.ToStatus(err).Code
			}
			if code != tc.wantCode {
				t.Fatalf("code = %d (%v), want %d", code, err, tc.wantCode)
			}
			if tc.wantMsg != "" && !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
			if diff := cmp.Diff(tc.wantWarns, warns); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
	if n := len(allowed.Requests()); n == 0 {
		t.Fatal("the allowing webhook was never called")
	}
}

// A webhook hears what the write is: the object, the resource, the user and the options.
func TestReviewRequest(t *testing.T) {
	hook := webhooktest.Start(t, webhooktest.Allow)
	src := &fakeSource{validating: []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{validating("ok.example.com", urlConfig(hook, "/validate"), fail, none, 5)}}}}
	if err := New(Config{Source: src}).Validate(t.Context(), podCreate(true)); err != nil {
		t.Fatal(err)
	}
	reqs := hook.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	got := struct {
		Kind      metav1.GroupVersionKind
		Resource  metav1.GroupVersionResource
		Name, NS  string
		Operation admissionv1.Operation
		User      string
		DryRun    bool
		Object    string
		Options   string
	}{r.Kind, r.Resource, r.Name, r.Namespace, r.Operation, r.UserInfo.Username, r.DryRun != nil && *r.DryRun,
		string(r.Object.Raw), string(r.Options.Raw)}
	want := got
	want.Kind, want.Resource = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
	want.Name, want.NS, want.Operation, want.User, want.DryRun = "p", "team-a", admissionv1.Create, "alice", true
	want.Options = `{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","dryRun":["All"]}`
	if !strings.Contains(got.Object, `"kind":"Pod"`) || !strings.Contains(got.Object, `"app":"web"`) {
		t.Errorf("object %s lacks its kind or labels", got.Object)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if r.UID == "" {
		t.Error("the request has no uid")
	}
}

func jsonPatch(patch string) webhooktest.Decide {
	return func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: []byte(patch)}
	}
}

func mutating(name string, cc admissionregistrationv1.WebhookClientConfig, reinvoke admissionregistrationv1.ReinvocationPolicyType) admissionregistrationv1.MutatingWebhook {
	v := validating(name, cc, fail, none, 5)
	return admissionregistrationv1.MutatingWebhook{Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, FailurePolicy: v.FailurePolicy,
		SideEffects: v.SideEffects, TimeoutSeconds: v.TimeoutSeconds, AdmissionReviewVersions: v.AdmissionReviewVersions, ReinvocationPolicy: &reinvoke}
}

// Mutating webhooks patch the object in place, one after another; one that asks to be
// reinvoked is called again when a later one changed the object.
func TestMutate(t *testing.T) {
	labeler := webhooktest.Start(t, jsonPatch(`[{"op":"add","path":"/metadata/labels/injected","value":"yes"}]`))
	observer := webhooktest.Start(t, webhooktest.Allow)
	badPatch := webhooktest.Start(t, jsonPatch(`[{"op":"replace","path":"/spec/nothing/here","value":1}]`))
	src := &fakeSource{mutating: []*admissionregistrationv1.MutatingWebhookConfiguration{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Webhooks: []admissionregistrationv1.MutatingWebhook{mutating("observe.example.com", urlConfig(observer, "/"), admissionregistrationv1.IfNeededReinvocationPolicy)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Webhooks: []admissionregistrationv1.MutatingWebhook{mutating("label.example.com", urlConfig(labeler, "/"), admissionregistrationv1.NeverReinvocationPolicy)}},
	}}
	a := podCreate(false)
	if err := New(Config{Source: src}).Mutate(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	got := a.Object.(*corev1.Pod)
	if diff := cmp.Diff(map[string]string{"app": "web", "injected": "yes"}, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got.Name != "p" || got.Namespace != "team-a" {
		t.Errorf("the patch lost the object's identity: %s/%s", got.Namespace, got.Name)
	}
	obs := observer.Requests()
	if len(obs) != 2 {
		t.Fatalf("the IfNeeded webhook was called %d times, want 2", len(obs))
	}
	if strings.Contains(string(obs[0].Object.Raw), "injected") || !strings.Contains(string(obs[1].Object.Raw), "injected") {
		t.Errorf("the reinvoked webhook should see the labeler's change only the second time")
	}
	if n := len(labeler.Requests()); n != 1 {
		t.Errorf("the Never webhook was called %d times, want 1", n)
	}

	src.mutating = []*admissionregistrationv1.MutatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{mutating("bad.example.com", urlConfig(badPatch, "/"), admissionregistrationv1.NeverReinvocationPolicy)}}}
	err := New(Config{Source: src}).Mutate(t.Context(), podCreate(false))
	if code := apierror.ToStatus(err).Code; err == nil || code != 500 {
		t.Errorf("a patch that does not apply: %v (code %d), want a 500", err, code)
	}
}

// A webhook behind a Service is reached at a ready endpoint's pod IP and target port, and its
// certificate checked for <service>.<namespace>.svc.
func TestServiceReference(t *testing.T) {
	hook := webhooktest.Start(t, deny(422, "from the service"), "hook.webhooks.svc")
	host, port, _ := strings.Cut(strings.TrimPrefix(hook.URL, "https://"), ":")
	var portNum int32
	for _, c := range port {
		portNum = portNum*10 + int32(c-'0')
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "webhooks", Name: "hook"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}}}}
	endpoints := &corev1.Endpoints{ObjectMeta: svc.ObjectMeta, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: host}}, Ports: []corev1.EndpointPort{{Name: "https", Port: portNum}}}}}
	ready := true
	name := "https"
	slice := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &portNum}}}
	path := "/validate"
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: hook.CABundle,
		Service: &admissionregistrationv1.ServiceReference{Namespace: "webhooks", Name: "hook", Path: &path, Port: ptr[int32](443)}}
	cases := []struct {
		name     string
		src      *fakeSource
		wantCode int32
	}{
		{"endpoints", &fakeSource{services: map[string]*corev1.Service{"webhooks/hook": svc}, endpoints: map[string]*corev1.Endpoints{"webhooks/hook": endpoints}}, 422},
		{"endpointslices", &fakeSource{services: map[string]*corev1.Service{"webhooks/hook": svc}, slices: map[string][]*discoveryv1.EndpointSlice{"webhooks/hook": {slice}}}, 422},
		{"no endpoints", &fakeSource{services: map[string]*corev1.Service{"webhooks/hook": svc}}, 500},
		{"no service", &fakeSource{}, 500},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.src.validating = []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "c"},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{validating("svc.example.com", cc, fail, none, 5)}}}
			err := New(Config{Source: tc.src}).Validate(t.Context(), podCreate(false))
			if code := apierror.ToStatus(err).Code; err == nil || code != tc.wantCode {
				t.Fatalf("got %v (code %d), want code %d", err, code, tc.wantCode)
			}
		})
	}
}

// The configurations are listed at most once per configTTL unless a write changes them.
func TestConfigurationCache(t *testing.T) {
	now := time.Unix(1000, 0)
	src := &fakeSource{}
	p := New(Config{Source: src, Now: func() time.Time { return now }})
	for range 3 {
		if err := p.Validate(t.Context(), podCreate(false)); err != nil {
			t.Fatal(err)
		}
	}
	if src.lists != 1 {
		t.Fatalf("listed %d times within the TTL, want 1", src.lists)
	}
	p.Changed("", "pods")
	_ = p.Validate(t.Context(), podCreate(false))
	if src.lists != 1 {
		t.Fatalf("a pod write made the plugin list again")
	}
	p.Changed(admissionregistrationv1.GroupName, "validatingwebhookconfigurations")
	_ = p.Validate(t.Context(), podCreate(false))
	if src.lists != 2 {
		t.Fatalf("listed %d times after a configuration changed, want 2", src.lists)
	}
	now = now.Add(configTTL)
	_ = p.Validate(t.Context(), podCreate(false))
	if src.lists != 3 {
		t.Fatalf("listed %d times after the TTL, want 3", src.lists)
	}
}
