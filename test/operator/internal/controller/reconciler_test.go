package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	demov1 "minik8s.io/test/operator/api/v1"
)

// TestReconcile runs Reconcile against controller-runtime's fake client (an in-memory API
// with the status subresource) and checks what it leaves stored.
func TestReconcile(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := demov1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	app := echoApp("web", ptr.To[int32](2), "hello")
	readyDeployment := func() *appsv1.Deployment {
		d := DesiredDeployment(app)
		d.Generation = 1
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2}
		return d
	}
	for _, tc := range []struct {
		name          string
		objs          []client.Object
		wantErr       bool
		wantReplicas  int32
		wantCondition string // reason of Available; "" when it depends on the server (generations)
	}{
		{name: "new EchoApp gets its children", objs: []client.Object{app.DeepCopy()},
			wantReplicas: 2, wantCondition: ReasonNotReady},
		{name: "ready children make it available", objs: []client.Object{app.DeepCopy(), readyDeployment(), DesiredService(app)},
			wantReplicas: 2, wantCondition: ReasonReady},
		{name: "a hand-scaled Deployment is put back", objs: []client.Object{app.DeepCopy(), func() client.Object {
			d := readyDeployment()
			d.Spec.Replicas = ptr.To[int32](7)
			return d
		}(), DesiredService(app)}, wantReplicas: 2},
		{name: "someone else's Deployment is left alone", objs: []client.Object{app.DeepCopy(), func() client.Object {
			d := readyDeployment()
			d.OwnerReferences = nil
			d.Spec.Replicas = ptr.To[int32](7)
			return d
		}()}, wantErr: true, wantReplicas: 7},
		{name: "a deleted EchoApp is done", objs: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.objs...).WithStatusSubresource(&demov1.EchoApp{}).Build()
			r := &Reconciler{Client: cl, Now: func() metav1.Time { return now }}
			key := types.NamespacedName{Namespace: "ns", Name: "web"}
			_, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: key})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Reconcile: %v, want error %v", err, tc.wantErr)
			}
			if tc.objs == nil {
				var d appsv1.Deployment
				if err := cl.Get(t.Context(), key, &d); !apierrors.IsNotFound(err) {
					t.Errorf("a Deployment for a missing EchoApp: %v", err)
				}
				return
			}
			var d appsv1.Deployment
			if err := cl.Get(t.Context(), key, &d); err != nil {
				t.Fatalf("deployment: %v", err)
			}
			if *d.Spec.Replicas != tc.wantReplicas {
				t.Errorf("deployment replicas %d, want %d", *d.Spec.Replicas, tc.wantReplicas)
			}
			var svc corev1.Service
			svcErr := cl.Get(t.Context(), key, &svc)
			if tc.wantErr {
				// The Service is still made: one child's trouble does not hold back the other.
				if svcErr != nil {
					t.Errorf("service: %v", svcErr)
				}
				return
			}
			if svcErr != nil || metav1.GetControllerOf(&svc) == nil || metav1.GetControllerOf(&svc).UID != app.UID {
				t.Errorf("service %v, owner %+v", svcErr, svc.OwnerReferences)
			}
			var got demov1.EchoApp
			if err := cl.Get(t.Context(), key, &got); err != nil {
				t.Fatal(err)
			}
			var reasons []string
			for _, c := range got.Status.Conditions {
				reasons = append(reasons, c.Type+"="+c.Reason)
			}
			if tc.wantCondition != "" {
				if diff := cmp.Diff([]string{"Available=" + tc.wantCondition}, reasons); diff != "" {
					t.Errorf("conditions (-want +got):\n%s", diff)
				}
			}
			if got.Status.Selector != "app.kubernetes.io/name=web" {
				t.Errorf("status.selector %q", got.Status.Selector)
			}
			if got.Spec.Message != "hello" {
				t.Errorf("the spec changed: %+v", got.Spec)
			}
		})
	}
}
