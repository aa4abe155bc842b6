package stats

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Snapshotter is what the collectors read at each scrape (a Reader).
type Snapshotter interface {
	Snapshot(ctx context.Context) (*Snapshot, error)
}

// scrapeTimeout bounds one snapshot taken for a scrape.
const scrapeTimeout = 10 * time.Second

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// The series of /metrics/resource, named and labelled as the kubelet's, which metrics-server
// reads.
var (
	resContainerCPU   = desc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed by the container in core-seconds", "container", "pod", "namespace")
	resContainerMem   = desc("container_memory_working_set_bytes", "Current working set of the container in bytes", "container", "pod", "namespace")
	resContainerStart = desc("container_start_time_seconds", "Start time of the container since unix epoch in seconds", "container", "pod", "namespace")
	resPodCPU         = desc("pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds", "pod", "namespace")
	resPodMem         = desc("pod_memory_working_set_bytes", "Current working set of the pod in bytes", "pod", "namespace")
	resNodeCPU        = desc("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds")
	resNodeMem        = desc("node_memory_working_set_bytes", "Current working set of the node in bytes")
	resScrapeError    = desc("resource_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise")
)

// ResourceCollector exports /metrics/resource: the node's, each pod's and each app
// container's CPU and memory (a pod's figures include its sandbox's).
func ResourceCollector(s Snapshotter, log *slog.Logger) prometheus.Collector {
	return collector{snap: s, log: log, descs: []*prometheus.Desc{resContainerCPU, resContainerMem, resContainerStart,
		resPodCPU, resPodMem, resNodeCPU, resNodeMem, resScrapeError}, emit: emitResource, scrapeError: resScrapeError}
}

func emitResource(ch chan<- prometheus.Metric, snap *Snapshot) {
	n := snap.Node
	ch <- at(n.Time, prometheus.MustNewConstMetric(resNodeCPU, prometheus.CounterValue, seconds(n.CPU.UsageNanos)))
	ch <- at(n.Time, prometheus.MustNewConstMetric(resNodeMem, prometheus.GaugeValue, float64(n.Memory.WorkingSet)))
	type pod struct {
		ns, name string
		cpu, mem uint64
		t        time.Time
	}
	var pods []*pod
	byUID := map[string]*pod{}
	for _, c := range snap.Containers {
		p := byUID[c.PodUID]
		if p == nil {
			p = &pod{ns: c.Namespace, name: c.Pod}
			byUID[c.PodUID] = p
			pods = append(pods, p)
		}
		p.cpu += c.Stats.CPU.UsageNanos
		p.mem += c.Stats.Memory.WorkingSet
		p.t = c.Time
		if c.Sandbox {
			continue
		}
		ch <- at(c.Time, prometheus.MustNewConstMetric(resContainerCPU, prometheus.CounterValue, seconds(c.Stats.CPU.UsageNanos), c.Container, c.Pod, c.Namespace))
		ch <- at(c.Time, prometheus.MustNewConstMetric(resContainerMem, prometheus.GaugeValue, float64(c.Stats.Memory.WorkingSet), c.Container, c.Pod, c.Namespace))
		ch <- at(c.Time, prometheus.MustNewConstMetric(resContainerStart, prometheus.GaugeValue, unixSeconds(c.Started), c.Container, c.Pod, c.Namespace))
	}
	for _, p := range pods {
		ch <- at(p.t, prometheus.MustNewConstMetric(resPodCPU, prometheus.CounterValue, seconds(p.cpu), p.name, p.ns))
		ch <- at(p.t, prometheus.MustNewConstMetric(resPodMem, prometheus.GaugeValue, float64(p.mem), p.name, p.ns))
	}
}

// cAdvisor's labels on every container series; the machine's own row (id "/") has empty
// ones but id.
var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

func cdesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, cadvisorLabels...), extra...), nil)
}

// The series of /metrics/cadvisor, with cAdvisor's names, help and labels.
var (
	cadCPU         = cdesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.")
	cadCPUUser     = cdesc("container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.")
	cadCPUSystem   = cdesc("container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.")
	cadMemUsage    = cdesc("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed")
	cadMemWS       = cdesc("container_memory_working_set_bytes", "Current working set in bytes.")
	cadMemRSS      = cdesc("container_memory_rss", "Size of RSS in bytes.")
	cadMemCache    = cdesc("container_memory_cache", "Number of bytes of page cache memory.")
	cadMemLimit    = cdesc("container_spec_memory_limit_bytes", "Memory limit for the container.")
	cadThreads     = cdesc("container_threads", "Number of threads running inside the container")
	cadStart       = cdesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds.")
	cadLastSeen    = cdesc("container_last_seen", "Last time a container was seen by the exporter")
	cadRxBytes     = cdesc("container_network_receive_bytes_total", "Cumulative count of bytes received", "interface")
	cadRxPackets   = cdesc("container_network_receive_packets_total", "Cumulative count of packets received", "interface")
	cadRxErrors    = cdesc("container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", "interface")
	cadRxDropped   = cdesc("container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", "interface")
	cadTxBytes     = cdesc("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", "interface")
	cadTxPackets   = cdesc("container_network_transmit_packets_total", "Cumulative count of packets transmitted", "interface")
	cadTxErrors    = cdesc("container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", "interface")
	cadTxDropped   = cdesc("container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", "interface")
	cadFSUsage     = cdesc("container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", "device")
	cadFSReadBytes = cdesc("container_fs_reads_bytes_total", "Cumulative count of bytes read", "device")
	cadFSWriteB    = cdesc("container_fs_writes_bytes_total", "Cumulative count of bytes written", "device")
	cadFSReads     = cdesc("container_fs_reads_total", "Cumulative count of reads completed", "device")
	cadFSWrites    = cdesc("container_fs_writes_total", "Cumulative count of writes completed", "device")
	cadCores       = desc("machine_cpu_cores", "Number of logical CPU cores.")
	cadMachineMem  = desc("machine_memory_bytes", "Amount of memory installed on the machine.")
)

// CadvisorCollector exports /metrics/cadvisor: cAdvisor's per-container CPU, memory,
// network and file system series, plus the machine as id "/".
func CadvisorCollector(s Snapshotter, log *slog.Logger) prometheus.Collector {
	return collector{snap: s, log: log, descs: []*prometheus.Desc{cadCPU, cadCPUUser, cadCPUSystem, cadMemUsage, cadMemWS,
		cadMemRSS, cadMemCache, cadMemLimit, cadThreads, cadStart, cadLastSeen, cadRxBytes, cadRxPackets, cadRxErrors,
		cadRxDropped, cadTxBytes, cadTxPackets, cadTxErrors, cadTxDropped, cadFSUsage, cadFSReadBytes, cadFSWriteB,
		cadFSReads, cadFSWrites, cadCores, cadMachineMem}, emit: emitCadvisor}
}

func emitCadvisor(ch chan<- prometheus.Metric, snap *Snapshot) {
	n := snap.Node
	ch <- prometheus.MustNewConstMetric(cadCores, prometheus.GaugeValue, float64(n.Cores))
	ch <- prometheus.MustNewConstMetric(cadMachineMem, prometheus.GaugeValue, float64(n.Memory.Limit))
	root := []string{"", "/", "", "", "", ""}
	emitUsage(ch, n.Time, root, n.CPU.UsageNanos, n.CPU.UserNanos, n.CPU.SystemNanos)
	ch <- at(n.Time, prometheus.MustNewConstMetric(cadMemUsage, prometheus.GaugeValue, float64(n.Memory.Usage), root...))
	ch <- at(n.Time, prometheus.MustNewConstMetric(cadMemWS, prometheus.GaugeValue, float64(n.Memory.WorkingSet), root...))
	ch <- at(n.Time, prometheus.MustNewConstMetric(cadMemRSS, prometheus.GaugeValue, float64(n.Memory.RSS), root...))
	ch <- at(n.Time, prometheus.MustNewConstMetric(cadMemCache, prometheus.GaugeValue, float64(n.Memory.Cache), root...))
	emitNet(ch, n.Time, root, n)
	for _, c := range snap.Containers {
		l := []string{c.Container, c.Cgroup, c.Image, c.Name, c.Namespace, c.Pod}
		st := c.Stats
		emitUsage(ch, c.Time, l, st.CPU.UsageNanos, st.CPU.UserNanos, st.CPU.SystemNanos)
		ch <- at(c.Time, prometheus.MustNewConstMetric(cadMemUsage, prometheus.GaugeValue, float64(st.Memory.Usage), l...))
		ch <- at(c.Time, prometheus.MustNewConstMetric(cadMemWS, prometheus.GaugeValue, float64(st.Memory.WorkingSet), l...))
		ch <- at(c.Time, prometheus.MustNewConstMetric(cadMemRSS, prometheus.GaugeValue, float64(st.Memory.RSS), l...))
		ch <- at(c.Time, prometheus.MustNewConstMetric(cadMemCache, prometheus.GaugeValue, float64(st.Memory.Cache), l...))
		ch <- at(c.Time, prometheus.MustNewConstMetric(cadMemLimit, prometheus.GaugeValue, float64(st.Memory.Limit), l...))
		ch <- at(c.Time, prometheus.MustNewConstMetric(cadThreads, prometheus.GaugeValue, float64(st.Tasks), l...))
		ch <- at(c.Time, prometheus.MustNewConstMetric(cadStart, prometheus.GaugeValue, unixSeconds(c.Started), l...))
		ch <- at(c.Time, prometheus.MustNewConstMetric(cadLastSeen, prometheus.GaugeValue, unixSeconds(c.Time), l...))
		if c.Sandbox {
			emitNet(ch, c.Time, l, Node{Net: c.Net})
		}
		if c.FSKnown {
			ch <- at(c.Time, prometheus.MustNewConstMetric(cadFSUsage, prometheus.GaugeValue, float64(c.FSUsage), append(append([]string{}, l...), c.FSDevice)...))
		}
		for i, d := range st.IO {
			dl := append(append([]string{}, l...), c.IODevices[i])
			ch <- at(c.Time, prometheus.MustNewConstMetric(cadFSReadBytes, prometheus.CounterValue, float64(d.ReadBytes), dl...))
			ch <- at(c.Time, prometheus.MustNewConstMetric(cadFSWriteB, prometheus.CounterValue, float64(d.WriteBytes), dl...))
			ch <- at(c.Time, prometheus.MustNewConstMetric(cadFSReads, prometheus.CounterValue, float64(d.Reads), dl...))
			ch <- at(c.Time, prometheus.MustNewConstMetric(cadFSWrites, prometheus.CounterValue, float64(d.Writes), dl...))
		}
	}
}

func emitUsage(ch chan<- prometheus.Metric, t time.Time, l []string, usage, user, system uint64) {
	ch <- at(t, prometheus.MustNewConstMetric(cadCPU, prometheus.CounterValue, seconds(usage), l...))
	ch <- at(t, prometheus.MustNewConstMetric(cadCPUUser, prometheus.CounterValue, seconds(user), l...))
	ch <- at(t, prometheus.MustNewConstMetric(cadCPUSystem, prometheus.CounterValue, seconds(system), l...))
}

func emitNet(ch chan<- prometheus.Metric, t time.Time, l []string, n Node) {
	for _, i := range n.Net {
		il := append(append([]string{}, l...), i.Name)
		for _, v := range []struct {
			d *prometheus.Desc
			n uint64
		}{{cadRxBytes, i.RxBytes}, {cadRxPackets, i.RxPackets}, {cadRxErrors, i.RxErrors}, {cadRxDropped, i.RxDropped},
			{cadTxBytes, i.TxBytes}, {cadTxPackets, i.TxPackets}, {cadTxErrors, i.TxErrors}, {cadTxDropped, i.TxDropped}} {
			ch <- at(t, prometheus.MustNewConstMetric(v.d, prometheus.CounterValue, float64(v.n), il...))
		}
	}
}

// collector takes a snapshot at each scrape, so nothing is sampled while nobody asks.
type collector struct {
	snap  Snapshotter
	log   *slog.Logger
	descs []*prometheus.Desc
	emit  func(chan<- prometheus.Metric, *Snapshot)
	// scrapeError, when set, reports whether the reading failed (1) or not (0).
	scrapeError *prometheus.Desc
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	snap, err := c.snap.Snapshot(ctx)
	failed := 0.0
	if err != nil {
		failed = 1
		if c.log != nil {
			c.log.Warn("reading container usage", "err", err)
		}
	}
	if c.scrapeError != nil {
		ch <- prometheus.MustNewConstMetric(c.scrapeError, prometheus.GaugeValue, failed)
	}
	if err == nil {
		c.emit(ch, snap)
	}
}

func at(t time.Time, m prometheus.Metric) prometheus.Metric {
	return prometheus.NewMetricWithTimestamp(t, m)
}

func seconds(nanos uint64) float64 { return float64(nanos) / 1e9 }

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
