package registry

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"testing"

	fuzz "github.com/google/gofuzz"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/scheme"
)

// FuzzTypedValidate fills objects of every served kind with random field values, reaching
// deep into specs that random bytes rarely decode into, and checks the same properties as
// FuzzDecodeValidate. Quantities, int-or-strings and times get values the JSON decoder could
// produce, since their internals are not reachable from the wire.
func FuzzTypedValidate(f *testing.F) {
	for i := range scheme.Resources {
		f.Add(uint8(i), int64(i), []byte("seed"))
	}
	sts := strategies(nil)
	f.Fuzz(func(t *testing.T, pick uint8, seed int64, data []byte) {
		r := scheme.Resources[int(pick)%len(scheme.Resources)]
		fz := fuzz.NewFromGoFuzz(append(data, byte(seed), byte(seed>>8))).NilChance(0.3).NumElements(0, 3).Funcs(
			func(q *apiresource.Quantity, c fuzz.Continue) {
				*q = *apiresource.NewMilliQuantity(c.Int63n(2000)-500, apiresource.DecimalSI)
			},
			func(v *intstr.IntOrString, c fuzz.Continue) {
				if c.RandBool() {
					*v = intstr.FromInt32(c.Int31n(70000) - 10)
				} else {
					*v = intstr.FromString(c.RandString())
				}
			},
			func(tm *metav1.Time, c fuzz.Continue) { *tm = metav1.Unix(c.Int63n(1<<32), 0) },
			func(tm *metav1.MicroTime, c fuzz.Continue) {
				*tm = metav1.NewMicroTime(metav1.Unix(c.Int63n(1<<32), 0).Time)
			},
			func(m *metav1.ManagedFieldsEntry, c fuzz.Continue) {},
			// Workflow states nest (branches, iterators, and/or/not rules): fuzz one level of
			// nesting, or the filled object grows without bound.
			func(b *serverlessv1.Branch, c fuzz.Continue) {
				c.Fuzz(&b.StartAt)
				b.States = map[string]serverlessv1.State{}
				for range c.Intn(3) {
					var st serverlessv1.State
					c.FuzzNoCustom(&st.Type)
					c.Fuzz(&st.Next)
					c.Fuzz(&st.End)
					c.Fuzz(&st.Function)
					c.Fuzz(&st.Choices)
					b.States[c.RandString()] = st
				}
			},
			func(r *serverlessv1.ChoiceRule, c fuzz.Continue) {
				leaf := func(r *serverlessv1.ChoiceRule) {
					c.Fuzz(&r.Variable)
					c.Fuzz(&r.NumericEquals)
					c.Fuzz(&r.StringLessThan)
					c.Fuzz(&r.BooleanEquals)
					c.Fuzz(&r.IsPresent)
					c.Fuzz(&r.Next)
				}
				leaf(r)
				for range c.Intn(3) {
					var sub serverlessv1.ChoiceRule
					leaf(&sub)
					r.And = append(r.And, sub)
				}
				if c.RandBool() {
					r.Not = &serverlessv1.ChoiceRule{}
					leaf(r.Not)
				}
			},
			// A CRD's schema nests itself: fuzz leaves, and one level of properties.
			func(p *apiextensionsv1.JSONSchemaProps, c fuzz.Continue) {
				leaf := func(p *apiextensionsv1.JSONSchemaProps) {
					c.Fuzz(&p.Type)
					c.Fuzz(&p.Format)
					c.Fuzz(&p.Pattern)
					c.Fuzz(&p.Required)
					c.Fuzz(&p.Nullable)
					c.Fuzz(&p.XPreserveUnknownFields)
				}
				leaf(p)
				for range c.Intn(3) {
					var sub apiextensionsv1.JSONSchemaProps
					leaf(&sub)
					if p.Properties == nil {
						p.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
					}
					p.Properties[c.RandString()] = sub
				}
			},
			func(e *runtime.RawExtension, c fuzz.Continue) {
				// ControllerRevision data: an object, nothing, or text that is not JSON.
				switch c.Intn(3) {
				case 0:
					e.Raw = []byte(`{"spec":{"template":{"$patch":"replace"}}}`)
				case 1:
					e.Raw = nil
				default:
					e.Raw = []byte(c.RandString())
				}
			},
			func(j *serverlessv1.JSON, c fuzz.Continue) {
				if c.RandBool() {
					j.Raw = []byte(`{"a.$": "` + c.RandString() + `"}`)
				} else {
					j.Raw = []byte(`{"n": 1}`)
				}
			},
		)
		obj, old := r.New(), r.New()
		fz.Fuzz(obj)
		fz.Fuzz(old)
		st := sts[r]
		st.Default(obj)
		noInternal(t, "create", st.Validate(obj))
		noInternal(t, "update", st.ValidateUpdate(obj, old))
		noInternal(t, "update reversed", st.ValidateUpdate(old, obj))
		st.DefaultUpdate(old, obj)
		noInternal(t, "update after DefaultUpdate", st.ValidateUpdate(old, obj))
	})
}
