package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// newCreateJob is `kubectl create job NAME --image=image [-- command]` and
// `kubectl create job NAME --from=cronjob/name`: a Job run by hand from a CronJob's template,
// annotated and owned as kubectl does.
func newCreateJob(o *options) *cobra.Command {
	var (
		f           createFlags
		image, from string
	)
	cmd := &cobra.Command{
		Use:   "job NAME --image=image [--from=cronjob/name] -- [COMMAND] [args...]",
		Short: "Create a job with the specified name",
		Example: "  kubectl create job my-job --image=busybox\n" +
			"  kubectl create job my-job --image=busybox -- date\n" +
			"  kubectl create job test-job --from=cronjob/a-cronjob",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			command := afterDash(cmd, args)
			if err := f.validate(); err != nil {
				return err
			}
			if (image == "") == (from == "") {
				return errors.New("either --image or --from must be specified")
			}
			if len(command) > 0 && from != "" {
				return errors.New("cannot specify --from and command")
			}
			job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
				ObjectMeta: metav1.ObjectMeta{Name: name}}
			cl, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if image != "" {
				job.Spec.Template.Spec = corev1.PodSpec{
					Containers:    []corev1.Container{{Name: name, Image: image, Command: command}},
					RestartPolicy: corev1.RestartPolicyNever,
				}
			} else {
				kind, cjName, ok := strings.Cut(from, "/")
				if !ok || cjName == "" {
					return fmt.Errorf("from must be of the form TYPE/NAME, got %q", from)
				}
				res, err := scheme.Lookup(kind)
				if err != nil {
					return err
				}
				if res.GVK.Kind != "CronJob" {
					return fmt.Errorf("unknown object type %s", res.GVK.Kind)
				}
				cj, err := client.MustFor[*batchv1.CronJob, *batchv1.CronJobList](cl).Get(ctx, o.ns(), cjName, metav1.GetOptions{})
				if err != nil {
					return err
				}
				fromCronJob(job, cj)
			}
			return createAndPrint[*batchv1.Job, *batchv1.JobList](ctx, o, cl, f, job, o.ns(), "")
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&image, "image", "", "Image name to run.")
	fl.StringVar(&from, "from", "", "The name of the resource to create a Job from (only cronjob is supported).")
	return cmd
}

// fromCronJob fills job from cj's job template: its labels, its annotations with
// cronjob.kubernetes.io/instantiate=manual, its spec, and cj as controller (without
// blockOwnerDeletion, as kubectl leaves it).
func fromCronJob(job *batchv1.Job, cj *batchv1.CronJob) {
	annotations := map[string]string{"cronjob.kubernetes.io/instantiate": "manual"}
	for k, v := range cj.Spec.JobTemplate.Annotations {
		annotations[k] = v
	}
	yes := true
	job.Annotations = annotations
	job.Labels = cj.Spec.JobTemplate.Labels
	job.OwnerReferences = []metav1.OwnerReference{{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "CronJob",
		Name: cj.Name, UID: cj.UID, Controller: &yes}}
	job.Spec = cj.Spec.JobTemplate.Spec
}
