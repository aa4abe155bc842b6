package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
)

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// DeepCopy returns a deep copy of j.
func (j *JSON) DeepCopy() *JSON {
	if j == nil {
		return nil
	}
	return &JSON{Raw: append([]byte(nil), j.Raw...)}
}

func copyStates(in map[string]State) map[string]State {
	if in == nil {
		return nil
	}
	out := make(map[string]State, len(in))
	for k, v := range in {
		var c State
		v.DeepCopyInto(&c)
		out[k] = c
	}
	return out
}

// DeepCopyInto copies b into out.
func (b *Branch) DeepCopyInto(out *Branch) {
	out.StartAt = b.StartAt
	out.States = copyStates(b.States)
}

// DeepCopyInto copies s into out.
func (s *State) DeepCopyInto(out *State) {
	*out = *s
	out.Parameters = s.Parameters.DeepCopy()
	out.TimeoutSeconds = copyPtr(s.TimeoutSeconds)
	if s.Retry != nil {
		out.Retry = make([]Retry, len(s.Retry))
		for i, r := range s.Retry {
			out.Retry[i] = Retry{
				ErrorEquals:     append([]string(nil), r.ErrorEquals...),
				IntervalSeconds: copyPtr(r.IntervalSeconds),
				MaxAttempts:     copyPtr(r.MaxAttempts),
				BackoffRate:     copyPtr(r.BackoffRate),
			}
		}
	}
	if s.Catch != nil {
		out.Catch = make([]Catch, len(s.Catch))
		for i, c := range s.Catch {
			c.ErrorEquals = append([]string(nil), c.ErrorEquals...)
			out.Catch[i] = c
		}
	}
	out.Choices = copyRules(s.Choices)
	out.Result = s.Result.DeepCopy()
	out.Seconds = copyPtr(s.Seconds)
	if s.Branches != nil {
		out.Branches = make([]Branch, len(s.Branches))
		for i := range s.Branches {
			s.Branches[i].DeepCopyInto(&out.Branches[i])
		}
	}
	if s.Iterator != nil {
		out.Iterator = new(Branch)
		s.Iterator.DeepCopyInto(out.Iterator)
	}
}

func copyRules(in []ChoiceRule) []ChoiceRule {
	if in == nil {
		return nil
	}
	out := make([]ChoiceRule, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// DeepCopyInto copies c into out.
func (c *ChoiceRule) DeepCopyInto(out *ChoiceRule) {
	*out = *c
	out.NumericEquals = copyPtr(c.NumericEquals)
	out.NumericLessThan = copyPtr(c.NumericLessThan)
	out.NumericGreaterThan = copyPtr(c.NumericGreaterThan)
	out.NumericLessThanEquals = copyPtr(c.NumericLessThanEquals)
	out.NumericGreaterThanEquals = copyPtr(c.NumericGreaterThanEquals)
	out.StringEquals = copyPtr(c.StringEquals)
	out.StringLessThan = copyPtr(c.StringLessThan)
	out.StringGreaterThan = copyPtr(c.StringGreaterThan)
	out.StringLessThanEquals = copyPtr(c.StringLessThanEquals)
	out.StringGreaterThanEquals = copyPtr(c.StringGreaterThanEquals)
	out.BooleanEquals = copyPtr(c.BooleanEquals)
	out.IsPresent = copyPtr(c.IsPresent)
	out.IsNull = copyPtr(c.IsNull)
	out.And = copyRules(c.And)
	out.Or = copyRules(c.Or)
	if c.Not != nil {
		out.Not = new(ChoiceRule)
		c.Not.DeepCopyInto(out.Not)
	}
}

// DeepCopyInto copies s into out.
func (s *WorkflowSpec) DeepCopyInto(out *WorkflowSpec) {
	*out = *s
	out.States = copyStates(s.States)
	out.TimeoutSeconds = copyPtr(s.TimeoutSeconds)
}

// DeepCopyInto copies w into out.
func (w *Workflow) DeepCopyInto(out *Workflow) {
	*out = *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	w.Spec.DeepCopyInto(&out.Spec)
	out.Status.Conditions = copyConditions(w.Status.Conditions)
}

// DeepCopy returns a deep copy of w.
func (w *Workflow) DeepCopy() *Workflow {
	if w == nil {
		return nil
	}
	out := new(Workflow)
	w.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (w *Workflow) DeepCopyObject() runtime.Object { return w.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *WorkflowList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &WorkflowList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Workflow, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// DeepCopyInto copies s into out.
func (s *WorkflowExecutionStatus) DeepCopyInto(out *WorkflowExecutionStatus) {
	*out = *s
	out.StartTime = s.StartTime.DeepCopy()
	out.CompletionTime = s.CompletionTime.DeepCopy()
	out.Output = s.Output.DeepCopy()
	if s.Steps != nil {
		out.Steps = make([]WorkflowStep, len(s.Steps))
		for i, st := range s.Steps {
			st.Input = st.Input.DeepCopy()
			st.Output = st.Output.DeepCopy()
			st.StartTime = *st.StartTime.DeepCopy()
			out.Steps[i] = st
		}
	}
}

// DeepCopyInto copies e into out.
func (e *WorkflowExecution) DeepCopyInto(out *WorkflowExecution) {
	*out = *e
	e.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Input = e.Spec.Input.DeepCopy()
	e.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of e.
func (e *WorkflowExecution) DeepCopy() *WorkflowExecution {
	if e == nil {
		return nil
	}
	out := new(WorkflowExecution)
	e.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (e *WorkflowExecution) DeepCopyObject() runtime.Object { return e.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *WorkflowExecutionList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &WorkflowExecutionList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]WorkflowExecution, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
