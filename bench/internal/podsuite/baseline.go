package podsuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/docker/docker/api/types/container"
	dockerclient "github.com/docker/docker/client"
)

// baselineLabel marks the baseline's containers with the run id, so a
// cleanup finds them whatever went wrong.
const baselineLabel = "minik8s.io/podbench-run"

// cniConfig is the kubelet's pod network (kubelet/internal/network/cninet,
// internal to its module) rebuilt here: bridge with host-local addresses,
// firewall and portmap, and loopback as a network of its own.
func cniConfig(name, bridge, cidr, dataDir string) (pod, lo []byte, err error) {
	gw, err := gateway(cidr)
	if err != nil {
		return nil, nil, err
	}
	pod, err = json.Marshal(map[string]any{
		"cniVersion": "1.0.0",
		"name":       name,
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": bridge, "isGateway": true, "ipMasq": true, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": cidr, "gateway": gw}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": dataDir,
				},
			},
			map[string]any{"type": "firewall", "backend": "iptables"},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}, "snat": true},
		},
	})
	if err != nil {
		return nil, nil, err
	}
	lo, err = json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": name + "-loopback", "plugins": []any{map[string]string{"type": "loopback"}}})
	return pod, lo, err
}

// gateway is the first address of an IPv4 /24 such as 10.244.201.0/24.
func gateway(cidr string) (string, error) {
	var a, b, c, d, bits int
	if _, err := fmt.Sscanf(cidr, "%d.%d.%d.%d/%d", &a, &b, &c, &d, &bits); err != nil || bits != 24 || d != 0 {
		return "", fmt.Errorf("pod CIDR %q: want an IPv4 /24", cidr)
	}
	return fmt.Sprintf("%d.%d.%d.1", a, b, c), nil
}

// baseline starts pods by hand: a pause container without network, CNI
// attach, then the app container joining the pause's namespaces. It is what
// the kubelet does for a pod, minus the API, the bus and status reporting.
type baseline struct {
	docker        *dockerclient.Client
	cni           *libcni.CNIConfig
	podNet, loNet *libcni.NetworkConfigList
	runID         string
	pause, image  string

	mu       sync.Mutex
	attached []attachment
}

type attachment struct {
	name, sandbox, netns string
}

func newBaseline(docker *dockerclient.Client, dir, runID, bridge, cidr string, pluginDirs []string, pause, image string) (*baseline, error) {
	podJSON, loJSON, err := cniConfig("minik8s-bench", bridge, cidr, filepath.Join(dir, "networks"))
	if err != nil {
		return nil, err
	}
	podNet, err := libcni.NetworkConfFromBytes(podJSON)
	if err != nil {
		return nil, fmt.Errorf("cni config: %w", err)
	}
	loNet, err := libcni.NetworkConfFromBytes(loJSON)
	if err != nil {
		return nil, fmt.Errorf("cni config: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &baseline{
		docker: docker,
		// As the kubelet: one exec shared by all calls, so libcni does not
		// create one lazily from many goroutines.
		cni: libcni.NewCNIConfigWithCacheDir(pluginDirs, filepath.Join(dir, "cache"), &invoke.DefaultExec{
			RawExec: &invoke.RawExec{Stderr: os.Stderr}, PluginDecoder: version.PluginDecoder{},
		}),
		podNet: podNet, loNet: loNet, runID: runID, pause: pause, image: image,
	}, nil
}

func (b *baseline) rt(a attachment, ifName string) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: a.sandbox, NetNS: a.netns, IfName: ifName,
		Args: [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "podbench"}, {"K8S_POD_NAME", a.name}}}
}

// start runs one pod and returns its timeline; Running is the app's start.
func (b *baseline) start(ctx context.Context, name string) (timeline, error) {
	t := timeline{Start: time.Now()}
	labels := map[string]string{baselineLabel: b.runID}
	sb, err := b.docker.ContainerCreate(ctx, &container.Config{Image: b.pause, Hostname: name, Labels: labels},
		&container.HostConfig{NetworkMode: "none", IpcMode: "shareable"}, nil, nil, "podbench-"+b.runID+"-"+name+"-pause")
	if err != nil {
		return t, fmt.Errorf("create sandbox: %w", err)
	}
	if err := b.docker.ContainerStart(ctx, sb.ID, container.StartOptions{}); err != nil {
		return t, fmt.Errorf("start sandbox: %w", err)
	}
	t.Sandbox = time.Now()
	info, err := b.docker.ContainerInspect(ctx, sb.ID)
	if err != nil {
		return t, fmt.Errorf("inspect sandbox: %w", err)
	}
	a := attachment{name: name, sandbox: sb.ID, netns: fmt.Sprintf("/proc/%d/ns/net", info.State.Pid)}
	b.mu.Lock()
	b.attached = append(b.attached, a)
	b.mu.Unlock()
	if _, err := b.cni.AddNetworkList(ctx, b.loNet, b.rt(a, "lo")); err != nil {
		return t, fmt.Errorf("cni loopback: %w", err)
	}
	if _, err := b.cni.AddNetworkList(ctx, b.podNet, b.rt(a, "eth0")); err != nil {
		return t, fmt.Errorf("cni add: %w", err)
	}
	join := "container:" + sb.ID
	app, err := b.docker.ContainerCreate(ctx, &container.Config{Image: b.image, Labels: labels},
		&container.HostConfig{NetworkMode: container.NetworkMode(join), IpcMode: container.IpcMode(join)}, nil, nil, "podbench-"+b.runID+"-"+name+"-echo")
	if err != nil {
		return t, fmt.Errorf("create app: %w", err)
	}
	if err := b.docker.ContainerStart(ctx, app.ID, container.StartOptions{}); err != nil {
		return t, fmt.Errorf("start app: %w", err)
	}
	t.App = time.Now()
	t.Running = t.App
	return t, nil
}

// run starts n pods named prefix-i on the schedule.
func (b *baseline) run(ctx context.Context, prefix string, n int, interval time.Duration) ([]timeline, error) {
	ts := make([]timeline, n)
	errs := make([]error, n)
	schedule(ctx, n, interval, func(i int) {
		ts[i], errs[i] = b.start(ctx, fmt.Sprintf("%s-%d", prefix, i))
	})
	return ts, errors.Join(errs...)
}

// cleanup detaches every sandbox (while its netns still exists) and removes
// the containers.
func (b *baseline) cleanup(ctx context.Context, e *env) error {
	b.mu.Lock()
	attached := b.attached
	b.attached = nil
	b.mu.Unlock()
	var errs []error
	for _, a := range attached {
		if err := b.cni.DelNetworkList(ctx, b.podNet, b.rt(a, "eth0")); err != nil {
			errs = append(errs, fmt.Errorf("cni del %s: %w", a.name, err))
		}
		if err := b.cni.DelNetworkList(ctx, b.loNet, b.rt(a, "lo")); err != nil {
			errs = append(errs, fmt.Errorf("cni del lo %s: %w", a.name, err))
		}
	}
	if err := e.removeContainers(ctx, baselineLabel+"="+b.runID); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
