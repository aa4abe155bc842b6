package cli

import (
	"errors"
	"regexp"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// newCreateCronJob is `kubectl create cronjob NAME --image=image --schedule='0/5 * * * ?'
// [-- command]`: a CronJob whose job runs one container named after it.
func newCreateCronJob(o *options) *cobra.Command {
	var (
		f                       createFlags
		image, schedule, policy string
	)
	cmd := &cobra.Command{
		Use:     "cronjob NAME --image=image --schedule='0/5 * * * ?' -- [COMMAND] [args...]",
		Aliases: []string{"cj"},
		Short:   "Create a cron job with the specified name",
		Example: "  kubectl create cronjob my-job --image=busybox --schedule=\"*/1 * * * *\"\n" +
			"  kubectl create cronjob my-job --image=busybox --schedule=\"*/1 * * * *\" -- date",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			command := afterDash(cmd, args)
			if err := f.validate(); err != nil {
				return err
			}
			if policy == "" {
				policy = string(corev1.RestartPolicyOnFailure)
			}
			cj := &batchv1.CronJob{TypeMeta: metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "CronJob"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: batchv1.CronJobSpec{Schedule: schedule, JobTemplate: batchv1.JobTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						Containers:    []corev1.Container{{Name: name, Image: image, Command: command}},
						RestartPolicy: corev1.RestartPolicy(policy),
					}}},
				}}}
			cl, err := o.client()
			if err != nil {
				return err
			}
			return createAndPrint[*batchv1.CronJob, *batchv1.CronJobList](cmd.Context(), o, cl, f, cj, o.ns(), "")
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&image, "image", "", "Image name to run.")
	fl.StringVar(&schedule, "schedule", "", "A schedule in the Cron format the job should be run with.")
	fl.StringVar(&policy, "restart", "", "job's restart policy. supported values: OnFailure, Never")
	_ = cmd.MarkFlagRequired("image")
	_ = cmd.MarkFlagRequired("schedule")
	return cmd
}

// budgetValue is what --min-available and --max-unavailable accept: a count or a percentage.
var budgetValue = regexp.MustCompile(`^[0-9]+%?$`)

// newCreatePDB is `kubectl create poddisruptionbudget NAME --selector=SELECTOR
// --min-available=N|--max-unavailable=N`.
func newCreatePDB(o *options) *cobra.Command {
	var (
		f                                  createFlags
		selector, minAvailable, maxUnavail string
	)
	cmd := &cobra.Command{
		Use:     "poddisruptionbudget NAME --selector=SELECTOR --min-available=N",
		Aliases: []string{"pdb"},
		Short:   "Create a pod disruption budget with the specified name",
		Example: "  kubectl create pdb my-pdb --selector=app=rails --min-available=1\n" +
			"  kubectl create pdb my-pdb --selector=app=nginx --min-available=50%",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			if err := f.validate(); err != nil {
				return err
			}
			switch {
			case selector == "":
				return errors.New("a selector must be specified")
			case minAvailable == "" && maxUnavail == "":
				return errors.New("one of min-available or max-unavailable must be specified")
			case minAvailable != "" && maxUnavail != "":
				return errors.New("min-available and max-unavailable cannot be both specified")
			case minAvailable != "" && !budgetValue.MatchString(minAvailable):
				return errors.New("invalid format specified for min-available")
			case maxUnavail != "" && !budgetValue.MatchString(maxUnavail):
				return errors.New("invalid format specified for max-unavailable")
			}
			sel, err := metav1.ParseToLabelSelector(selector)
			if err != nil {
				return err
			}
			pdb := &policyv1.PodDisruptionBudget{TypeMeta: metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
				ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
			if minAvailable != "" {
				v := intstr.Parse(minAvailable)
				pdb.Spec.MinAvailable = &v
			} else {
				v := intstr.Parse(maxUnavail)
				pdb.Spec.MaxUnavailable = &v
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			return createAndPrint[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList](cmd.Context(), o, cl, f, pdb, o.ns(), "")
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&selector, "selector", "", "A label selector to use for this budget. Only equality-based selector requirements are supported.")
	fl.StringVar(&minAvailable, "min-available", "", "The minimum number or percentage of available pods this budget requires.")
	fl.StringVar(&maxUnavail, "max-unavailable", "", "The maximum number or percentage of unavailable pods this budget requires.")
	return cmd
}

// newCreatePriorityClass is `kubectl create priorityclass NAME --value=VALUE
// --global-default=BOOL`.
func newCreatePriorityClass(o *options) *cobra.Command {
	var (
		f                   createFlags
		value               int32
		globalDefault       bool
		description, policy string
	)
	cmd := &cobra.Command{
		Use:     "priorityclass NAME --value=VALUE --global-default=BOOL",
		Aliases: []string{"pc"},
		Short:   "Create a priority class with the specified name",
		Example: "  kubectl create priorityclass high-priority --value=1000 --description=\"high priority\"\n" +
			"  kubectl create priorityclass default-priority --value=1000 --global-default=true",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			if err := f.validate(); err != nil {
				return err
			}
			preemption := corev1.PreemptionPolicy(policy)
			pc := &schedulingv1.PriorityClass{TypeMeta: metav1.TypeMeta{APIVersion: schedulingv1.SchemeGroupVersion.String(), Kind: "PriorityClass"},
				ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: globalDefault,
				Description: description, PreemptionPolicy: &preemption}
			cl, err := o.client()
			if err != nil {
				return err
			}
			return createAndPrint[*schedulingv1.PriorityClass, *schedulingv1.PriorityClassList](cmd.Context(), o, cl, f, pc, "", "")
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.Int32Var(&value, "value", 0, "the value of this priority class.")
	fl.BoolVar(&globalDefault, "global-default", false, "global-default specifies whether this PriorityClass should be considered as the default priority.")
	fl.StringVar(&description, "description", "", "description is an arbitrary string that usually provides guidelines on when this priority class should be used.")
	fl.StringVar(&policy, "preemption-policy", string(corev1.PreemptLowerPriority), "preemption-policy is the policy for preempting pods with lower priority.")
	return cmd
}
