package autoscaler

import (
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

func fnWithScale(sc *serverlessv1.FunctionScale) *serverlessv1.Function {
	fn := &serverlessv1.Function{}
	fn.Namespace, fn.Name = "default", "fn"
	if sc != nil {
		fn.Spec.Scale = *sc
	}
	return fn
}
