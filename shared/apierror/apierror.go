package apierror

import (
	"errors"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Sentinels, one per metav1.StatusReason a caller acts on.
var (
	ErrBadRequest           = errors.New("bad request")
	ErrUnauthorized         = errors.New("unauthorized")
	ErrForbidden            = errors.New("forbidden")
	ErrNotFound             = errors.New("not found")
	ErrMethodNotAllowed     = errors.New("method not allowed")
	ErrAlreadyExists        = errors.New("already exists")
	ErrConflict             = errors.New("conflict")
	ErrGone                 = errors.New("gone")
	ErrRequestTooLarge      = errors.New("request entity too large")
	ErrNotAcceptable        = errors.New("not acceptable")
	ErrUnsupportedMediaType = errors.New("unsupported media type")
	ErrInvalid              = errors.New("invalid")
	ErrTooManyRequests      = errors.New("too many requests")
	ErrTimeout              = errors.New("timeout")
	ErrUnavailable          = errors.New("service unavailable")
	ErrInternal             = errors.New("internal error")
)

var reasons = []struct {
	err    error
	reason metav1.StatusReason
	code   int32
}{
	{ErrBadRequest, metav1.StatusReasonBadRequest, http.StatusBadRequest},
	{ErrUnauthorized, metav1.StatusReasonUnauthorized, http.StatusUnauthorized},
	{ErrForbidden, metav1.StatusReasonForbidden, http.StatusForbidden},
	{ErrNotFound, metav1.StatusReasonNotFound, http.StatusNotFound},
	{ErrMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, http.StatusMethodNotAllowed},
	{ErrAlreadyExists, metav1.StatusReasonAlreadyExists, http.StatusConflict},
	{ErrConflict, metav1.StatusReasonConflict, http.StatusConflict},
	{ErrGone, metav1.StatusReasonExpired, http.StatusGone},
	{ErrRequestTooLarge, metav1.StatusReasonRequestEntityTooLarge, http.StatusRequestEntityTooLarge},
	{ErrNotAcceptable, metav1.StatusReasonNotAcceptable, http.StatusNotAcceptable},
	{ErrUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, http.StatusUnsupportedMediaType},
	{ErrInvalid, metav1.StatusReasonInvalid, http.StatusUnprocessableEntity},
	{ErrTooManyRequests, metav1.StatusReasonTooManyRequests, http.StatusTooManyRequests},
	{ErrTimeout, metav1.StatusReasonTimeout, http.StatusGatewayTimeout},
	{ErrUnavailable, metav1.StatusReasonServiceUnavailable, http.StatusServiceUnavailable},
	{ErrInternal, metav1.StatusReasonInternalError, http.StatusInternalServerError},
}

// Error carries a full Status alongside the sentinel it matches.
type Error struct {
	Status metav1.Status
	kind   error
}

func (e *Error) Error() string { return e.Status.Message }

// Unwrap lets errors.Is match the sentinel.
func (e *Error) Unwrap() error { return e.kind }

// New builds an Error of the sentinel kind with a message.
func New(kind error, format string, args ...any) *Error {
	e := &Error{kind: kind}
	e.Status = metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  fmt.Sprintf(format, args...),
	}
	for _, r := range reasons {
		if r.err == kind {
			e.Status.Reason, e.Status.Code = r.reason, r.code
		}
	}
	if kind == ErrNotFound {
		// Kubernetes' 404s always carry details, empty when no object is named; clients read
		// Details.Name without checking for nil (kubectl debug does).
		e.Status.Details = &metav1.StatusDetails{}
	}
	return e
}

// WithDetails sets the object the error is about.
func (e *Error) WithDetails(group, kind, name string) *Error {
	if e.Status.Details == nil {
		e.Status.Details = &metav1.StatusDetails{}
	}
	e.Status.Details.Group, e.Status.Details.Kind, e.Status.Details.Name = group, kind, name
	return e
}

// NotFound is the Kubernetes "<resource> \"name\" not found" error.
func NotFound(group, resource, name string) *Error {
	return New(ErrNotFound, "%s %q not found", qualified(group, resource), name).WithDetails(group, resource, name)
}

// AlreadyExists is the Kubernetes "<resource> \"name\" already exists" error.
func AlreadyExists(group, resource, name string) *Error {
	return New(ErrAlreadyExists, "%s %q already exists", qualified(group, resource), name).WithDetails(group, resource, name)
}

// Forbidden is Kubernetes' 403 about an object, "<resource> \"name\" is forbidden: why", or
// "<resource> is forbidden: why" when the request names none (a create with generateName, a
// list), or "forbidden: why" outside any resource.
func Forbidden(group, resource, name, why string) *Error {
	var e *Error
	switch {
	case resource == "":
		e = New(ErrForbidden, "forbidden: %s", why)
	case name == "":
		e = New(ErrForbidden, "%s is forbidden: %s", qualified(group, resource), why)
	default:
		e = New(ErrForbidden, "%s %q is forbidden: %s", qualified(group, resource), name, why)
	}
	return e.WithDetails(group, resource, name)
}

// Conflict is returned when a write's resourceVersion is stale.
func Conflict(group, resource, name, why string) *Error {
	return New(ErrConflict, "Operation cannot be fulfilled on %s %q: %s", qualified(group, resource), name, why).WithDetails(group, resource, name)
}

// Invalid is the 422 error listing each bad field with its path.
func Invalid(group, kind, name string, errs field.ErrorList) *Error {
	e := New(ErrInvalid, "%s %q is invalid: %s", qualified(group, kind), name, errs.ToAggregate().Error()).WithDetails(group, kind, name)
	for _, fe := range errs {
		e.Status.Details.Causes = append(e.Status.Details.Causes, metav1.StatusCause{
			Type:    metav1.CauseType(fe.Type),
			Message: fe.ErrorBody(),
			Field:   fe.Field,
		})
	}
	return e
}

func qualified(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// FromStatus maps a Status received from the apiserver back to an Error of the right kind.
func FromStatus(s *metav1.Status) *Error {
	e := &Error{Status: *s, kind: ErrInternal}
	for _, r := range reasons {
		if r.reason == s.Reason {
			e.kind = r.err
			return e
		}
	}
	for _, r := range reasons {
		if r.code == s.Code {
			e.kind = r.err
			return e
		}
	}
	return e
}

// ToStatus turns any error into the Status the apiserver answers with. Errors that are not of
// this package become 500s: they are bugs or failed dependencies, never bad input.
func ToStatus(err error) *metav1.Status {
	var e *Error
	if errors.As(err, &e) {
		s := e.Status
		return &s
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return &New(r.err, "%s", err.Error()).Status
		}
	}
	return &New(ErrInternal, "%s", err.Error()).Status
}
