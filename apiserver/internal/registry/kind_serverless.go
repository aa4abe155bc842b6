package registry

import (
	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// The serverless kinds: functions, and workflows of them with their executions.

var _ = register(Kind[*serverlessv1.Function]{
	Resource:   served("functions"),
	Default:    defaults.Function,
	Validation: validation.Function,
	Table:      tables.Function,
})

var _ = register(Kind[*serverlessv1.Workflow]{
	Resource:   served("workflows"),
	Validation: validation.Workflow,
	Table:      tables.Workflow,
})

var _ = register(Kind[*serverlessv1.WorkflowExecution]{
	Resource:   served("workflowexecutions"),
	Validation: validation.WorkflowExecution,
	Table:      tables.WorkflowExecution,
})
