package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPodPorts(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}},
	}}}
	tests := []struct {
		specs   []string
		want    []string
		wantErr string
	}{
		{specs: []string{"8080"}, want: []string{"8080"}},
		{specs: []string{"9000:8080", ":8080", "0:8080"}, want: []string{"9000:8080", ":8080", "0:8080"}},
		{specs: []string{"http"}, want: []string{"8080"}},
		{specs: []string{"9000:http"}, want: []string{"9000:8080"}},
		{specs: []string{":http"}, want: []string{":8080"}},
		// kubectl reads A:B:C as A.
		{specs: []string{"80:81:82"}, want: []string{"80"}},
		{specs: []string{"grpc"}, wantErr: "Pod 'web' does not have a named port 'grpc'"},
		{specs: []string{"8080:"}, wantErr: "Pod 'web' does not have a named port ''"},
		{specs: []string{"x:80"}, wantErr: `error parsing local port 'x': strconv.ParseUint: parsing "x": invalid syntax`},
		{specs: []string{"70000"}, wantErr: `error parsing local port '70000': strconv.ParseUint: parsing "70000": value out of range`},
		{specs: []string{"80:70000"}, wantErr: `error parsing remote port '70000': strconv.ParseUint: parsing "70000": value out of range`},
		{specs: []string{"-1"}, wantErr: `error parsing local port '-1': strconv.ParseUint: parsing "-1": invalid syntax`},
		{specs: []string{"0"}, wantErr: "remote port must be > 0"},
		{specs: []string{"8080:0"}, wantErr: "remote port must be > 0"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.specs, " "), func(t *testing.T) {
			got, err := podPorts(tt.specs, pod)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServicePorts(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}},
	}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "web", Port: 80, TargetPort: intstr.FromInt32(8080)},
		{Name: "named", Port: 81, TargetPort: intstr.FromString("http")},
		{Name: "same", Port: 82},
	}}}
	tests := []struct {
		specs   []string
		want    []string
		wantErr string
	}{
		{specs: []string{"80"}, want: []string{"80:8080"}},
		{specs: []string{"9000:80"}, want: []string{"9000:8080"}},
		{specs: []string{"web"}, want: []string{"80:8080"}},
		{specs: []string{"81"}, want: []string{"81:8080"}},
		{specs: []string{"82"}, want: []string{"82"}},
		{specs: []string{":80"}, want: []string{":8080"}},
		{specs: []string{"83"}, wantErr: "Service web does not have a service port 83"},
		{specs: []string{"grpc"}, wantErr: "Service 'web' does not have a named port 'grpc'"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.specs, " "), func(t *testing.T) {
			got, err := servicePorts(tt.specs, svc, pod)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}
