package server

import (
	"errors"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/shared/apierror"
)

// Query parameters are read with the API machinery's own parameter codec, as kube-apiserver
// reads them: a boolean is true unless it is "false" or "0" (any case), so Python's
// watch=True works; numbers and selectors are parsed there too.

// decodeQuery fills opts (a meta/v1 options struct, or internalversion.ListOptions) from the
// request's query. A parameter that does not parse is a 400.
func decodeQuery(c *gin.Context, opts runtime.Object) error {
	if err := metainternalscheme.ParameterCodec.DecodeParameters(c.Request.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return apierror.New(apierror.ErrBadRequest, "%v", err)
	}
	return nil
}

// invalidOptions is the 422 of options that parsed but are not valid together.
func invalidOptions(kind string, errs field.ErrorList) error {
	return apierror.Invalid(metav1.GroupName, kind, "", errs)
}

// listOptions reads the options of a list or watch. Only watches may ask for initial events
// (watch-list); the rules are Kubernetes' own.
func listOptions(c *gin.Context) (*internalversion.ListOptions, error) {
	opts := &internalversion.ListOptions{}
	if err := decodeQuery(c, opts); err != nil {
		return nil, err
	}
	if errs := metainternalvalidation.ValidateListOptions(opts, true); len(errs) > 0 {
		return nil, invalidOptions("ListOptions", errs)
	}
	return opts, nil
}

func getOptions(c *gin.Context) (*metav1.GetOptions, error) {
	opts := &metav1.GetOptions{}
	return opts, decodeQuery(c, opts)
}

func createOptions(c *gin.Context) (*metav1.CreateOptions, error) {
	opts := &metav1.CreateOptions{}
	if err := decodeQuery(c, opts); err != nil {
		return nil, err
	}
	if errs := metavalidation.ValidateCreateOptions(opts); len(errs) > 0 {
		return nil, invalidOptions("CreateOptions", errs)
	}
	return opts, nil
}

func updateOptions(c *gin.Context) (*metav1.UpdateOptions, error) {
	opts := &metav1.UpdateOptions{}
	if err := decodeQuery(c, opts); err != nil {
		return nil, err
	}
	if errs := metavalidation.ValidateUpdateOptions(opts); len(errs) > 0 {
		return nil, invalidOptions("UpdateOptions", errs)
	}
	return opts, nil
}

func patchOptions(c *gin.Context, pt types.PatchType) (*metav1.PatchOptions, error) {
	opts := &metav1.PatchOptions{}
	if err := decodeQuery(c, opts); err != nil {
		return nil, err
	}
	if errs := metavalidation.ValidatePatchOptions(opts, pt); len(errs) > 0 {
		return nil, invalidOptions("PatchOptions", errs)
	}
	return opts, nil
}

// deleteOptions reads DeleteOptions from the body when there is one (JSON, YAML or protobuf,
// in any group version, as clients send it), from the query otherwise, as Kubernetes does.
func deleteOptions(c *gin.Context) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	data, err := readLimited(c)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		err := decodeInto(c, nil, data, opts, schema.GroupVersionKind{Kind: "DeleteOptions"}, metav1.FieldValidationIgnore)
		if errors.Is(err, apierror.ErrBadRequest) {
			return nil, apierror.New(apierror.ErrBadRequest, "the DeleteOptions in the body could not be decoded: %v", err)
		}
		if err != nil {
			return nil, err
		}
	} else if err := decodeQuery(c, opts); err != nil {
		return nil, err
	}
	if errs := metavalidation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return nil, invalidOptions("DeleteOptions", errs)
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		return nil, apierror.New(apierror.ErrBadRequest, "gracePeriodSeconds must not be negative")
	}
	return opts, nil
}

// fieldValidation is the directive of a write: Strict, Warn (the default) or Ignore.
func fieldValidation(v string) string {
	if v == "" {
		return metav1.FieldValidationWarn
	}
	return v
}
