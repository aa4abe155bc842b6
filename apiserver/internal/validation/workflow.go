package validation

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/statepath"
)

var stateTypes = []serverlessv1.StateType{
	serverlessv1.StateTask, serverlessv1.StateChoice, serverlessv1.StatePass, serverlessv1.StateWait,
	serverlessv1.StateSucceed, serverlessv1.StateFail, serverlessv1.StateParallel, serverlessv1.StateMap,
}

// Limits that keep a definition, and the executions' traces, a reasonable size.
const (
	maxStateName       = 80
	maxWorkflowTimeout = 24 * 3600
	maxChoiceDepth     = 16
)

// Workflow is how Workflows are validated.
var Workflow = Rules[*serverlessv1.Workflow]{Name: dnsSubdomain, Spec: validateWorkflow}

func validateWorkflow(w *serverlessv1.Workflow) field.ErrorList {
	sp := field.NewPath("spec")
	allErrs := validateMachine(w.Spec.StartAt, w.Spec.States, sp)
	if t := w.Spec.TimeoutSeconds; t != nil && (*t <= 0 || *t > maxWorkflowTimeout) {
		allErrs = append(allErrs, field.Invalid(sp.Child("timeoutSeconds"), *t, fmt.Sprintf("must be between 1 and %d", maxWorkflowTimeout)))
	}
	return allErrs
}

// validateMachine checks one state machine: the workflow's, a Parallel branch or a Map
// iterator, each with its own state names.
func validateMachine(startAt string, states map[string]serverlessv1.State, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	statesPath := p.Child("states")
	if len(states) == 0 {
		allErrs = append(allErrs, field.Required(statesPath, "must have at least one state"))
	}
	startPath := p.Child("startAt")
	if startAt == "" {
		allErrs = append(allErrs, field.Required(startPath, ""))
	} else if _, ok := states[startAt]; !ok && len(states) > 0 {
		allErrs = append(allErrs, field.NotFound(startPath, startAt))
	}
	target := func(fp *field.Path, name string) {
		if _, ok := states[name]; !ok {
			allErrs = append(allErrs, field.NotFound(fp, name))
		}
	}
	for _, name := range sortedKeys(states) {
		st := states[name]
		sp := statesPath.Key(name)
		switch {
		case name == "":
			allErrs = append(allErrs, field.Invalid(sp, name, "state name must not be empty"))
		case len(name) > maxStateName:
			allErrs = append(allErrs, field.TooLong(sp, "", maxStateName))
		case strings.ContainsAny(name, "[]"):
			allErrs = append(allErrs, field.Invalid(sp, name, "state name must not contain '[' or ']' (the trace names nested states name[i].inner)"))
		}
		allErrs = append(allErrs, validateState(st, sp, target)...)
	}
	if len(allErrs) == 0 {
		allErrs = append(allErrs, validateFlow(startAt, states, statesPath)...)
	}
	return allErrs
}

// validateState checks one state; target reports a transition to a state that does not exist.
func validateState(st serverlessv1.State, p *field.Path, target func(*field.Path, string)) field.ErrorList {
	var allErrs field.ErrorList
	if st.Type == "" {
		return append(allErrs, field.Required(p.Child("type"), fmt.Sprintf("one of %s", quoteTypes())))
	}
	if !contains(stateTypes, st.Type) {
		return append(allErrs, field.NotSupported(p.Child("type"), st.Type, stateTypes))
	}
	allErrs = append(allErrs, forbiddenForType(st, p)...)
	switch st.Type {
	case serverlessv1.StateTask, serverlessv1.StatePass, serverlessv1.StateWait, serverlessv1.StateParallel, serverlessv1.StateMap:
		switch {
		case st.Next != "" && st.End:
			allErrs = append(allErrs, field.Invalid(p.Child("end"), st.End, "may not be true when `next` is set"))
		case st.Next != "":
			target(p.Child("next"), st.Next)
		case !st.End:
			allErrs = append(allErrs, field.Required(p.Child("next"), "either `next` or `end: true` is required"))
		}
	}
	for _, f := range []struct {
		name, value string
	}{{"inputPath", st.InputPath}, {"resultPath", st.ResultPath}, {"outputPath", st.OutputPath}, {"secondsPath", st.SecondsPath}, {"timestampPath", st.TimestampPath}, {"itemsPath", st.ItemsPath}} {
		allErrs = append(allErrs, pathErrs(p.Child(f.name), f.value)...)
	}
	if st.Parameters != nil {
		allErrs = append(allErrs, validateParameters(st.Parameters, p.Child("parameters"))...)
	}
	switch st.Type {
	case serverlessv1.StateTask:
		if st.Function == "" {
			allErrs = append(allErrs, field.Required(p.Child("function"), "a Task names the Function it runs"))
		} else {
			allErrs = append(allErrs, nameErrs(p.Child("function"), st.Function, validation.IsDNS1123Label)...)
		}
		if t := st.TimeoutSeconds; t != nil && (*t <= 0 || *t > maxFunctionTimeout) {
			allErrs = append(allErrs, field.Invalid(p.Child("timeoutSeconds"), *t, fmt.Sprintf("must be between 1 and %d", maxFunctionTimeout)))
		}
	case serverlessv1.StateChoice:
		if len(st.Choices) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("choices"), "a Choice needs at least one rule"))
		}
		for i, rule := range st.Choices {
			rp := p.Child("choices").Index(i)
			allErrs = append(allErrs, validateChoiceRule(rule, rp, 0)...)
			if rule.Next == "" {
				allErrs = append(allErrs, field.Required(rp.Child("next"), "a top-level rule names the state it goes to"))
			} else {
				target(rp.Child("next"), rule.Next)
			}
		}
		if st.Default != "" {
			target(p.Child("default"), st.Default)
		}
	case serverlessv1.StateWait:
		n := 0
		for _, set := range []bool{st.Seconds != nil, st.SecondsPath != "", st.Timestamp != "", st.TimestampPath != ""} {
			if set {
				n++
			}
		}
		if n != 1 {
			allErrs = append(allErrs, field.Invalid(p, n, "exactly one of seconds, secondsPath, timestamp, timestampPath must be set"))
		}
		if st.Seconds != nil && (*st.Seconds < 0 || *st.Seconds > maxWorkflowTimeout) {
			allErrs = append(allErrs, field.Invalid(p.Child("seconds"), *st.Seconds, fmt.Sprintf("must be between 0 and %d", maxWorkflowTimeout)))
		}
		if st.Timestamp != "" {
			if _, err := time.Parse(time.RFC3339, st.Timestamp); err != nil {
				allErrs = append(allErrs, field.Invalid(p.Child("timestamp"), st.Timestamp, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z"))
			}
		}
	case serverlessv1.StateParallel:
		if len(st.Branches) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("branches"), "a Parallel state needs at least one branch"))
		}
		for i, b := range st.Branches {
			allErrs = append(allErrs, validateMachine(b.StartAt, b.States, p.Child("branches").Index(i))...)
		}
	case serverlessv1.StateMap:
		if st.Iterator == nil {
			allErrs = append(allErrs, field.Required(p.Child("iterator"), "a Map state runs its iterator on every item"))
		} else {
			allErrs = append(allErrs, validateMachine(st.Iterator.StartAt, st.Iterator.States, p.Child("iterator"))...)
		}
		if st.MaxConcurrency < 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("maxConcurrency"), st.MaxConcurrency, "must be greater than or equal to 0"))
		}
	}
	for i, r := range st.Retry {
		rp := p.Child("retry").Index(i)
		allErrs = append(allErrs, errorNamesErrs(r.ErrorEquals, rp.Child("errorEquals"), i == len(st.Retry)-1)...)
		allErrs = append(allErrs, positive(rp.Child("intervalSeconds"), r.IntervalSeconds)...)
		allErrs = append(allErrs, nonNegative(rp.Child("maxAttempts"), r.MaxAttempts)...)
		if r.BackoffRate != nil && *r.BackoffRate < 1 {
			allErrs = append(allErrs, field.Invalid(rp.Child("backoffRate"), *r.BackoffRate, "must be at least 1.0"))
		}
	}
	for i, c := range st.Catch {
		cp := p.Child("catch").Index(i)
		allErrs = append(allErrs, errorNamesErrs(c.ErrorEquals, cp.Child("errorEquals"), i == len(st.Catch)-1)...)
		if c.Next == "" {
			allErrs = append(allErrs, field.Required(cp.Child("next"), "a catch names the state it goes to"))
		} else {
			target(cp.Child("next"), c.Next)
		}
		allErrs = append(allErrs, pathErrs(cp.Child("resultPath"), c.ResultPath)...)
	}
	return allErrs
}

func quoteTypes() string {
	q := make([]string, len(stateTypes))
	for i, t := range stateTypes {
		q[i] = string(t)
	}
	return strings.Join(q, ", ")
}

// forbiddenForType rejects fields that the state's type does not use, so a typo such as a
// Task with "default" is reported instead of silently ignored.
func forbiddenForType(st serverlessv1.State, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	forbid := func(set bool, name string) {
		if set {
			allErrs = append(allErrs, field.Forbidden(p.Child(name), fmt.Sprintf("may not be set for a %s state", st.Type)))
		}
	}
	is := func(types ...serverlessv1.StateType) bool { return contains(types, st.Type) }
	const (
		task, choice, pass, wait = serverlessv1.StateTask, serverlessv1.StateChoice, serverlessv1.StatePass, serverlessv1.StateWait
		fail, par, mp            = serverlessv1.StateFail, serverlessv1.StateParallel, serverlessv1.StateMap
	)
	forbid(!is(task, pass, wait, par, mp) && st.Next != "", "next")
	forbid(!is(task, pass, wait, par, mp) && st.End, "end")
	forbid(is(fail) && st.InputPath != "", "inputPath")
	forbid(is(fail) && st.OutputPath != "", "outputPath")
	forbid(!is(task, pass, par, mp) && st.ResultPath != "", "resultPath")
	forbid(!is(task, pass, par) && st.Parameters != nil, "parameters")
	forbid(!is(task) && st.Function != "", "function")
	forbid(!is(task) && st.TimeoutSeconds != nil, "timeoutSeconds")
	forbid(!is(task, par, mp) && len(st.Retry) > 0, "retry")
	forbid(!is(task, par, mp) && len(st.Catch) > 0, "catch")
	forbid(!is(choice) && len(st.Choices) > 0, "choices")
	forbid(!is(choice) && st.Default != "", "default")
	forbid(!is(pass) && st.Result != nil, "result")
	forbid(!is(wait) && st.Seconds != nil, "seconds")
	forbid(!is(wait) && st.SecondsPath != "", "secondsPath")
	forbid(!is(wait) && st.Timestamp != "", "timestamp")
	forbid(!is(wait) && st.TimestampPath != "", "timestampPath")
	forbid(!is(fail) && st.Error != "", "error")
	forbid(!is(fail) && st.Cause != "", "cause")
	forbid(!is(par) && len(st.Branches) > 0, "branches")
	forbid(!is(mp) && st.ItemsPath != "", "itemsPath")
	forbid(!is(mp) && st.Iterator != nil, "iterator")
	forbid(!is(mp) && st.MaxConcurrency != 0, "maxConcurrency")
	return allErrs
}

// pathErrs checks an optional JSON path.
func pathErrs(p *field.Path, v string) field.ErrorList {
	if v == "" {
		return nil
	}
	if _, err := statepath.Parse(v); err != nil {
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf(`must be a JSON path such as "$.a.b[0]": %v`, err))}
	}
	return nil
}

// validateParameters checks a Parameters template: an object whose keys ending in ".$"
// hold paths, at any depth.
func validateParameters(j *serverlessv1.JSON, p *field.Path) field.ErrorList {
	var v any
	if err := json.Unmarshal(j.Raw, &v); err != nil {
		return field.ErrorList{field.Invalid(p, j.String(), "must be JSON")}
	}
	if _, ok := v.(map[string]any); !ok {
		return field.ErrorList{field.Invalid(p, j.String(), "must be an object")}
	}
	var allErrs field.ErrorList
	var walk func(v any, p *field.Path)
	walk = func(v any, p *field.Path) {
		switch c := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(c) {
				if strings.HasSuffix(k, ".$") {
					s, ok := c[k].(string)
					if !ok {
						allErrs = append(allErrs, field.Invalid(p.Key(k), c[k], `a key ending in ".$" takes a JSON path`))
						continue
					}
					allErrs = append(allErrs, pathErrs(p.Key(k), s)...)
					continue
				}
				walk(c[k], p.Key(k))
			}
		case []any:
			for i, x := range c {
				walk(x, p.Index(i))
			}
		}
	}
	walk(v, p)
	return allErrs
}

// errorNamesErrs checks the errorEquals of a retry or catch rule: States.ALL may only stand
// alone, in the last rule.
func errorNamesErrs(names []string, p *field.Path, last bool) field.ErrorList {
	if len(names) == 0 {
		return field.ErrorList{field.Required(p, `names the errors the rule applies to, e.g. ["States.ALL"]`)}
	}
	var allErrs field.ErrorList
	for i, n := range names {
		switch {
		case n == "":
			allErrs = append(allErrs, field.Invalid(p.Index(i), n, "must not be empty"))
		case n == serverlessv1.ErrorAll && (len(names) > 1 || !last):
			allErrs = append(allErrs, field.Invalid(p.Index(i), n, "States.ALL must be the only error of the last rule"))
		case strings.HasPrefix(n, "States.") && !contains(knownErrors, n):
			allErrs = append(allErrs, field.NotSupported(p.Index(i), n, knownErrors))
		}
	}
	return allErrs
}

var knownErrors = []string{serverlessv1.ErrorAll, serverlessv1.ErrorTaskFailed, serverlessv1.ErrorTimeout,
	serverlessv1.ErrorRuntime, serverlessv1.ErrorBranchFailed, serverlessv1.ErrorNoChoiceMatched}

var comparisons = "numericEquals, numericLessThan, numericGreaterThan, numericLessThanEquals, numericGreaterThanEquals, " +
	"stringEquals, stringLessThan, stringGreaterThan, stringLessThanEquals, stringGreaterThanEquals, booleanEquals, isPresent, isNull, and, or, not"

// validateChoiceRule checks a rule and, recursively, the rules it combines. Only top-level
// rules have next; the caller checks it.
func validateChoiceRule(r serverlessv1.ChoiceRule, p *field.Path, depth int) field.ErrorList {
	var allErrs field.ErrorList
	if depth > maxChoiceDepth {
		return field.ErrorList{field.Invalid(p, "", fmt.Sprintf("rules nest deeper than %d levels", maxChoiceDepth))}
	}
	if depth > 0 && r.Next != "" {
		allErrs = append(allErrs, field.Forbidden(p.Child("next"), "only top-level rules of a Choice have next"))
	}
	compare := 0
	for _, set := range []bool{
		r.NumericEquals != nil, r.NumericLessThan != nil, r.NumericGreaterThan != nil, r.NumericLessThanEquals != nil, r.NumericGreaterThanEquals != nil,
		r.StringEquals != nil, r.StringLessThan != nil, r.StringGreaterThan != nil, r.StringLessThanEquals != nil, r.StringGreaterThanEquals != nil,
		r.BooleanEquals != nil, r.IsPresent != nil, r.IsNull != nil,
	} {
		if set {
			compare++
		}
	}
	combine := 0
	for _, set := range []bool{r.And != nil, r.Or != nil, r.Not != nil} {
		if set {
			combine++
		}
	}
	if compare+combine != 1 {
		return append(allErrs, field.Invalid(p, compare+combine, "exactly one comparison or combinator ("+comparisons+") must be set"))
	}
	if compare == 1 {
		if r.Variable == "" {
			allErrs = append(allErrs, field.Required(p.Child("variable"), `the JSON path of the value compared, e.g. "$.n"`))
		} else {
			allErrs = append(allErrs, pathErrs(p.Child("variable"), r.Variable)...)
		}
		return allErrs
	}
	if r.Variable != "" {
		allErrs = append(allErrs, field.Forbidden(p.Child("variable"), "and, or and not take their variables in their own rules"))
	}
	switch {
	case r.Not != nil:
		allErrs = append(allErrs, validateChoiceRule(*r.Not, p.Child("not"), depth+1)...)
	case r.And != nil:
		if len(r.And) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("and"), "must hold at least one rule"))
		}
		for i, sub := range r.And {
			allErrs = append(allErrs, validateChoiceRule(sub, p.Child("and").Index(i), depth+1)...)
		}
	default:
		if len(r.Or) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("or"), "must hold at least one rule"))
		}
		for i, sub := range r.Or {
			allErrs = append(allErrs, validateChoiceRule(sub, p.Child("or").Index(i), depth+1)...)
		}
	}
	return allErrs
}

// transitions are the states st may go to next: next, the choices and default, the catches.
func transitions(st serverlessv1.State) []string {
	var out []string
	if st.Next != "" {
		out = append(out, st.Next)
	}
	for _, r := range st.Choices {
		out = append(out, r.Next)
	}
	if st.Default != "" {
		out = append(out, st.Default)
	}
	for _, c := range st.Catch {
		out = append(out, c.Next)
	}
	return out
}

func terminal(st serverlessv1.State) bool {
	return st.Type == serverlessv1.StateSucceed || st.Type == serverlessv1.StateFail || st.End
}

// validateFlow reports the states startAt never leads to, and the states from which no
// terminal state (Succeed, Fail or end: true) can be reached: an execution there would run
// until its deadline. It expects every transition to name an existing state.
func validateFlow(startAt string, states map[string]serverlessv1.State, statesPath *field.Path) field.ErrorList {
	reachable := sets.New(startAt)
	queue := []string{startAt}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		for _, n := range transitions(states[name]) {
			if !reachable.Has(n) {
				reachable.Insert(n)
				queue = append(queue, n)
			}
		}
	}
	// Walk backwards from the terminal states.
	from := map[string][]string{}
	ends := sets.New[string]()
	for name, st := range states {
		if terminal(st) {
			ends.Insert(name)
		}
		for _, n := range transitions(st) {
			from[n] = append(from[n], name)
		}
	}
	queue = sets.List(ends)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		for _, prev := range from[name] {
			if !ends.Has(prev) {
				ends.Insert(prev)
				queue = append(queue, prev)
			}
		}
	}
	var allErrs field.ErrorList
	for _, name := range sortedKeys(states) {
		switch {
		case !reachable.Has(name):
			allErrs = append(allErrs, field.Invalid(statesPath.Key(name), name, "state is unreachable from startAt"))
		case !ends.Has(name):
			allErrs = append(allErrs, field.Invalid(statesPath.Key(name), name, "no terminal state (Succeed, Fail or end: true) can be reached from this state: it loops forever"))
		}
	}
	return allErrs
}

// WorkflowExecution is how WorkflowExecutions are validated.
var WorkflowExecution = Rules[*serverlessv1.WorkflowExecution]{Name: dnsSubdomain, Spec: validateWorkflowExecution, Update: validateWorkflowExecutionUpdate}

func validateWorkflowExecution(e *serverlessv1.WorkflowExecution) field.ErrorList {
	sp := field.NewPath("spec")
	var allErrs field.ErrorList
	if e.Spec.Workflow == "" {
		allErrs = append(allErrs, field.Required(sp.Child("workflow"), "names the Workflow to run"))
	} else {
		allErrs = append(allErrs, nameErrs(sp.Child("workflow"), e.Spec.Workflow, validation.IsDNS1123Subdomain)...)
	}
	if in := e.Spec.Input; in != nil && len(in.Raw) > maxFunctionSource {
		allErrs = append(allErrs, field.TooLong(sp.Child("input"), "", maxFunctionSource))
	}
	if ph := e.Status.Phase; ph != "" && !contains(executionPhases, ph) {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("status", "phase"), ph, executionPhases))
	}
	return allErrs
}

var executionPhases = []string{serverlessv1.ExecutionRunning, serverlessv1.ExecutionSucceeded, serverlessv1.ExecutionFailed}

func validateWorkflowExecutionUpdate(n, o *serverlessv1.WorkflowExecution) field.ErrorList {
	var allErrs field.ErrorList
	sp := field.NewPath("spec")
	if n.Spec.Workflow != o.Spec.Workflow {
		allErrs = append(allErrs, field.Forbidden(sp.Child("workflow"), "is immutable"))
	}
	if n.Spec.Input.String() != o.Spec.Input.String() {
		allErrs = append(allErrs, field.Forbidden(sp.Child("input"), "is immutable"))
	}
	return allErrs
}
