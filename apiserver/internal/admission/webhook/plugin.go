package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"minik8s.io/shared/apierror"
)

// Config is what a Plugin needs.
type Config struct {
	Source Source
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Authorizer answers matchConditions' authorizer checks; without it those fail to
	// evaluate.
	Authorizer authorizer.UnconditionalAuthorizer
}

// Plugin is webhook admission. Build it with New; it starts nothing.
type Plugin struct {
	src    Source
	log    *slog.Logger
	now    func() time.Time
	caller *caller
	cache  configCache
	authz  authorizer.UnconditionalAuthorizer
}

// New builds the plugin.
func New(cfg Config) *Plugin {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Plugin{src: cfg.Source, log: cfg.Logger, now: cfg.Now, caller: &caller{src: cfg.Source}, authz: cfg.Authorizer}
}

// configTTL bounds how long the webhook configurations read are trusted without reading them
// again: writes through this apiserver are seen at once (Changed), another apiserver's within
// configTTL. A write in a cluster without webhooks then costs at most two lists a second.
const configTTL = time.Second

// configCache holds the webhooks last read, in the order they are called.
type configCache struct {
	mu         sync.Mutex
	at         time.Time
	valid      bool
	generation uint64
	mutating   []*hook
	validating []*hook
}

// Changed tells the plugin a webhook configuration was written, so the next write reads them
// again; writes of other resources are ignored.
func (p *Plugin) Changed(group, resource string) {
	if group != admissionregistrationv1.GroupName {
		return
	}
	p.cache.mu.Lock()
	defer p.cache.mu.Unlock()
	p.cache.valid = false
	p.cache.generation++
}

// hooks are the mutating and validating webhooks, sorted as upstream calls them: by
// configuration name, then in their order within it.
func (p *Plugin) hooks(ctx context.Context) (mutating, validating []*hook, err error) {
	now := p.now()
	c := &p.cache
	c.mu.Lock()
	if c.valid && now.Sub(c.at) < configTTL {
		defer c.mu.Unlock()
		return c.mutating, c.validating, nil
	}
	gen := c.generation
	c.mu.Unlock()

	mcs, err := p.src.MutatingWebhookConfigurations(ctx)
	if err != nil {
		return nil, nil, err
	}
	vcs, err := p.src.ValidatingWebhookConfigurations(ctx)
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(mcs, func(a, b *admissionregistrationv1.MutatingWebhookConfiguration) int {
		return strings.Compare(a.Name, b.Name)
	})
	slices.SortFunc(vcs, func(a, b *admissionregistrationv1.ValidatingWebhookConfiguration) int {
		return strings.Compare(a.Name, b.Name)
	})
	for _, mc := range mcs {
		for _, w := range mc.Webhooks {
			h, err := newHook(mc.Name, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.NamespaceSelector, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds)
			if err != nil {
				return nil, nil, err
			}
			h.reinvoke = w.ReinvocationPolicy != nil && *w.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy
			h.matcher = newMatcher(w.MatchConditions, w.FailurePolicy, typeMutating, w.Name)
			mutating = append(mutating, h)
		}
	}
	for _, vc := range vcs {
		for _, w := range vc.Webhooks {
			h, err := newHook(vc.Name, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.NamespaceSelector, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds)
			if err != nil {
				return nil, nil, err
			}
			h.matcher = newMatcher(w.MatchConditions, w.FailurePolicy, typeValidating, w.Name)
			validating = append(validating, h)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.generation == gen {
		c.mutating, c.validating, c.at, c.valid = mutating, validating, now, true
	}
	return mutating, validating, nil
}

// nsLabels reads namespaces' labels once per write.
func (p *Plugin) nsLabels() namespaceLabels {
	seen := map[string]labels.Set{}
	var mu sync.Mutex
	return func(ctx context.Context, name string) (labels.Set, error) {
		mu.Lock()
		defer mu.Unlock()
		if set, ok := seen[name]; ok {
			return set, nil
		}
		ns, err := p.src.Namespace(ctx, name)
		if err != nil {
			return nil, err
		}
		seen[name] = ns.Labels
		return ns.Labels, nil
	}
}

// Hook types, as the duration metric labels them.
const (
	typeMutating   = "admit"
	typeValidating = "validating"
)

// Mutate calls the mutating webhooks that match the write, one after another, and applies
// their patches to a.Object in place. A webhook with reinvocationPolicy IfNeeded is called
// once more when a webhook after it changed the object, as upstream.
func (p *Plugin) Mutate(ctx context.Context, a *Attributes) error {
	if exempt(a) {
		return nil
	}
	hooks, _, err := p.hooks(ctx)
	if err != nil {
		return apierror.New(apierror.ErrInternal, "reading mutating webhook configurations: %v", err)
	}
	if len(hooks) == 0 {
		return nil
	}
	nsLabels := p.nsLabels()
	called := make([]bool, len(hooks))
	again := make([]bool, len(hooks))
	for i, h := range hooks {
		changed, ran, err := p.mutateOnce(ctx, h, a, nsLabels)
		if err != nil {
			return err
		}
		called[i] = ran
		if changed {
			for j := range i {
				again[j] = again[j] || (called[j] && hooks[j].reinvoke)
			}
		}
	}
	for i, h := range hooks {
		if again[i] {
			if _, _, err := p.mutateOnce(ctx, h, a, nsLabels); err != nil {
				return err
			}
		}
	}
	return nil
}

// mutateOnce calls h about the write when it matches; changed says its patch changed the
// object.
func (p *Plugin) mutateOnce(ctx context.Context, h *hook, a *Attributes, nsLabels namespaceLabels) (changed, called bool, err error) {
	ok, err := h.matches(ctx, a, nsLabels, p.authz)
	if err != nil || !ok {
		return false, false, err
	}
	rv, err := newReview(a)
	if err != nil {
		return false, true, apierror.New(apierror.ErrInternal, "encoding the admission review: %v", err)
	}
	start := p.now()
	resp, err := p.invoke(ctx, h, a, rv)
	if err == nil && len(resp.Patch) > 0 {
		changed, err = applyPatch(h.name, a, rv.req.Object.Raw, resp.Patch)
	}
	return changed, true, p.outcome(h, typeMutating, a, start, err)
}

// Validate calls the validating webhooks that match the write, in parallel; the first refusal
// in their order is the answer.
func (p *Plugin) Validate(ctx context.Context, a *Attributes) error {
	if exempt(a) {
		return nil
	}
	_, hooks, err := p.hooks(ctx)
	if err != nil {
		return apierror.New(apierror.ErrInternal, "reading validating webhook configurations: %v", err)
	}
	if len(hooks) == 0 {
		return nil
	}
	nsLabels := p.nsLabels()
	var matched []*hook
	for _, h := range hooks {
		ok, err := h.matches(ctx, a, nsLabels, p.authz)
		if err != nil {
			return err
		}
		if ok {
			matched = append(matched, h)
		}
	}
	if len(matched) == 0 {
		return nil
	}
	rv, err := newReview(a)
	if err != nil {
		return apierror.New(apierror.ErrInternal, "encoding the admission review: %v", err)
	}
	errs := make([]error, len(matched))
	var wg sync.WaitGroup
	for i, h := range matched {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := p.now()
			_, err := p.invoke(ctx, h, a, rv)
			errs[i] = p.outcome(h, typeValidating, a, start, err)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// invoke calls h unless the write is a dry run h may not see, and turns a refusal into the
// Status the client gets.
func (p *Plugin) invoke(ctx context.Context, h *hook, a *Attributes, rv *review) (*admissionv1.AdmissionResponse, error) {
	if a.DryRun {
		if h.sideEffects == nil {
			return nil, &callError{h.name, errors.New("Webhook SideEffects is nil")}
		}
		if s := *h.sideEffects; s != admissionregistrationv1.SideEffectClassNone && s != admissionregistrationv1.SideEffectClassNoneOnDryRun {
			return nil, apierror.New(apierror.ErrBadRequest, "admission webhook %q does not support dry run", h.name)
		}
	}
	resp, err := p.caller.call(ctx, h, rv)
	if err != nil {
		return nil, err
	}
	for _, w := range resp.Warnings {
		warn(ctx, w)
	}
	if !resp.Allowed {
		return nil, &rejection{denied(h.name, resp.Result)}
	}
	return resp, nil
}

// rejection is a webhook's refusal.
type rejection struct{ err *apierror.Error }

func (r *rejection) Error() string { return r.err.Error() }

// denied is the Status of a refusal, as upstream words it: the webhook's own code when it is
// an error code (400 otherwise), and its message or reason after whom it came from.
func denied(name string, result *metav1.Status) *apierror.Error {
	s := metav1.Status{}
	if result != nil {
		s = *result
	}
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if s.Code < http.StatusBadRequest {
		s.Code = http.StatusBadRequest
	}
	if s.Status == "" || s.Status == metav1.StatusSuccess {
		s.Status = metav1.StatusFailure
	}
	by := fmt.Sprintf("admission webhook %q denied the request", name)
	switch {
	case s.Message != "":
		s.Message = by + ": " + s.Message
	case s.Reason != "":
		s.Message = by + ": " + string(s.Reason)
	default:
		s.Message = by + " without explanation"
	}
	return apierror.FromStatus(&s)
}

// outcome records a call in the metrics and decides what it means for the write: nil to go on
// (success, or a failure of a webhook that fails open), else the error the client gets.
func (p *Plugin) outcome(h *hook, typ string, a *Attributes, start time.Time, err error) error {
	op := string(a.Operation)
	var ce *callError
	var rej *rejection
	switch {
	case err == nil:
		observe(h.name, typ, op, p.now().Sub(start), false)
		return nil
	case errors.As(err, &ce) && h.failOpen:
		observe(h.name, typ, op, p.now().Sub(start), false)
		p.log.Warn("failed calling webhook, failing open", "webhook", h.name, "err", err)
		return nil
	case errors.As(err, &ce):
		observe(h.name, typ, op, p.now().Sub(start), true)
		observeRejection(h.name, typ, op, errCalling, 0)
		p.log.Warn("failed calling webhook, failing closed", "webhook", h.name, "err", err)
		return apierror.New(apierror.ErrInternal, "Internal error occurred: %v", err)
	case errors.As(err, &rej):
		observe(h.name, typ, op, p.now().Sub(start), true)
		observeRejection(h.name, typ, op, errNone, rej.err.Status.Code)
		return rej.err
	default:
		observe(h.name, typ, op, p.now().Sub(start), true)
		observeRejection(h.name, typ, op, errInternal, 0)
		return err
	}
}

// applyPatch applies a mutating webhook's JSON patch to the object encoded as raw, and decodes
// the result back into a.Object in place; changed says the object is not what it was.
func applyPatch(name string, a *Attributes, raw, patch []byte) (changed bool, err error) {
	if a.Object == nil {
		return false, &callError{name, errors.New("the webhook returned a patch for a request without an object")}
	}
	jp, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return false, &callError{name, fmt.Errorf("decoding the patch: %w", err)}
	}
	patched, err := jp.Apply(raw)
	if err != nil {
		return false, &callError{name, fmt.Errorf("applying the patch: %w", err)}
	}
	if jsonEqual(raw, patched) {
		return false, nil
	}
	// Decode into a zero object of the same type: fields the patch removed must go.
	fresh := reflect.New(reflect.TypeOf(a.Object).Elem()).Interface().(runtime.Object)
	if err := json.Unmarshal(patched, fresh); err != nil {
		return false, apierror.New(apierror.ErrInternal, "decoding the object webhook %q patched: %v", name, err)
	}
	gvk := a.Object.GetObjectKind().GroupVersionKind()
	if got := fresh.GetObjectKind().GroupVersionKind(); got != gvk {
		return false, &callError{name, fmt.Errorf("the patch changed the object's kind from %v to %v", gvk, got)}
	}
	reflect.ValueOf(a.Object).Elem().Set(reflect.ValueOf(fresh).Elem())
	return true, nil
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
