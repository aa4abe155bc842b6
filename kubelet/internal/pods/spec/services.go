package spec

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// masterServices are the Services of the default namespace every container learns about,
// whatever its pod's enableServiceLinks: the API's own.
var masterServices = map[string]bool{"kubernetes": true}

// ServiceLister lists the cluster's Services, for the variables containers get about them.
type ServiceLister interface {
	// List returns every Service, or an error while they have not been read once: a
	// container started meanwhile would miss variables it could never get later.
	List() ([]*corev1.Service, error)
}

// ServiceEnv is the variables a container of a pod in namespace gets about Services, as
// Kubernetes' kubelet sets them: the default namespace's `kubernetes` Service always, and
// with enableServiceLinks every Service of the pod's own namespace, each as
// <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT[_<PORT NAME>] and Docker links' <NAME>_PORT*.
// Services without a cluster IP (headless) get none.
func ServiceEnv(services []*corev1.Service, namespace string, enableServiceLinks bool) map[string]string {
	chosen := map[string]*corev1.Service{}
	for _, s := range services {
		if !serviceIPSet(s) {
			continue
		}
		switch {
		case s.Namespace == metav1.NamespaceDefault && masterServices[s.Name]:
			// A namesake in the pod's own namespace, linked, takes its place.
			if _, taken := chosen[s.Name]; !taken {
				chosen[s.Name] = s
			}
		case s.Namespace == namespace && enableServiceLinks:
			chosen[s.Name] = s
		}
	}
	out := map[string]string{}
	for _, s := range chosen {
		for _, kv := range serviceVars(s) {
			out[kv[0]] = kv[1]
		}
	}
	return out
}

func serviceIPSet(s *corev1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone && len(s.Spec.Ports) > 0
}

// serviceVars is one Service's variables; the first port gets the unnumbered names.
func serviceVars(s *corev1.Service) [][2]string {
	prefix := envName(s.Name)
	ip := s.Spec.ClusterIP
	out := [][2]string{
		{prefix + "_SERVICE_HOST", ip},
		{prefix + "_SERVICE_PORT", strconv.Itoa(int(s.Spec.Ports[0].Port))},
	}
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			out = append(out, [2]string{prefix + "_SERVICE_PORT_" + envName(p.Name), strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range s.Spec.Ports {
		proto := strings.ToLower(string(corev1.ProtocolTCP))
		if p.Protocol != "" {
			proto = strings.ToLower(string(p.Protocol))
		}
		url := proto + "://" + net.JoinHostPort(ip, strconv.Itoa(int(p.Port)))
		if i == 0 {
			out = append(out, [2]string{prefix + "_PORT", url})
		}
		port := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
		out = append(out,
			[2]string{port, url},
			[2]string{port + "_PROTO", proto},
			[2]string{port + "_PORT", strconv.Itoa(int(p.Port))},
			[2]string{port + "_ADDR", ip},
		)
	}
	return out
}

func envName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }

// serviceEnv is the Service variables of the pod's containers; none without a lister.
func (b Builder) serviceEnv(pod *corev1.Pod) (map[string]string, error) {
	if b.Services == nil {
		return nil, nil
	}
	list, err := b.Services.List()
	if err != nil {
		return nil, fmt.Errorf("services have not yet been read at least once, cannot construct envvars: %w", err)
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	return ServiceEnv(list, pod.Namespace, links), nil
}

// sortedEnv is vars as NAME=value in name order, without the names in skip.
func sortedEnv(vars map[string]string, skip map[string]bool) []string {
	names := make([]string, 0, len(vars))
	for k := range vars {
		if !skip[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, k := range names {
		out = append(out, k+"="+vars[k])
	}
	return out
}
