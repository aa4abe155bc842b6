package audit

import (
	"encoding/json"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The types below are audit.k8s.io/v1's, field for field in JSON, so policies and log readers
// written for Kubernetes work unchanged; they are declared here rather than imported from
// k8s.io/apiserver, whose module would pull a second copy of the etcd and gRPC stacks.

// GroupVersion is the API version of policies and events.
const GroupVersion = "audit.k8s.io/v1"

// Level is how much of a request is recorded.
type Level string

const (
	LevelNone            Level = "None"
	LevelMetadata        Level = "Metadata"
	LevelRequest         Level = "Request"
	LevelRequestResponse Level = "RequestResponse"
)

// Less reports whether l records less than o.
func (l Level) Less(o Level) bool { return l.rank() < o.rank() }

func (l Level) rank() int {
	switch l {
	case LevelMetadata:
		return 1
	case LevelRequest:
		return 2
	case LevelRequestResponse:
		return 3
	}
	return 0
}

// Stage is a point in a request's life at which an event is written.
type Stage string

const (
	StageRequestReceived  Stage = "RequestReceived"
	StageResponseStarted  Stage = "ResponseStarted"
	StageResponseComplete Stage = "ResponseComplete"
	StagePanic            Stage = "Panic"
)

// Policy says how each request is recorded: the first rule that matches decides.
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Rules             []PolicyRule `json:"rules"`
	OmitStages        []Stage      `json:"omitStages,omitempty"`
	OmitManagedFields bool         `json:"omitManagedFields,omitempty"`
}

// PolicyRule matches requests; every field given must match.
type PolicyRule struct {
	Level             Level            `json:"level"`
	Users             []string         `json:"users,omitempty"`
	UserGroups        []string         `json:"userGroups,omitempty"`
	Verbs             []string         `json:"verbs,omitempty"`
	Resources         []GroupResources `json:"resources,omitempty"`
	Namespaces        []string         `json:"namespaces,omitempty"`
	NonResourceURLs   []string         `json:"nonResourceURLs,omitempty"`
	OmitStages        []Stage          `json:"omitStages,omitempty"`
	OmitManagedFields *bool            `json:"omitManagedFields,omitempty"`
}

// GroupResources names resources of one API group ("" is the core group).
type GroupResources struct {
	Group         string   `json:"group,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// ObjectReference is what a request was about.
type ObjectReference struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	UID         string `json:"uid,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// Event is one stage of one request.
type Event struct {
	metav1.TypeMeta          `json:",inline"`
	Level                    Level             `json:"level"`
	AuditID                  types.UID         `json:"auditID"`
	Stage                    Stage             `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     authnv1.UserInfo  `json:"user"`
	ImpersonatedUser         *authnv1.UserInfo `json:"impersonatedUser,omitempty"`
	SourceIPs                []string          `json:"sourceIPs,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *ObjectReference  `json:"objectRef,omitempty"`
	ResponseStatus           *metav1.Status    `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp metav1.MicroTime  `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime  `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}
