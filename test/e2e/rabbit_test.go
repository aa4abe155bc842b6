package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus/amqptest"
)

// received is one message as it came off the test queue.
type received struct {
	id, routingKey string
	headers        map[string]string
	body           []byte
}

// recorder consumes a private queue bound to every key of the events exchange and keeps
// the messages that belong to one test (other apiservers on this broker publish too).
type recorder struct {
	mu   sync.Mutex
	msgs []received
	errs []error
}

func (r *recorder) snapshot() ([]received, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.msgs...), append([]error(nil), r.errs...)
}

// startRecorder declares the queue, binds it before returning (so every later change is
// queued) and consumes it until the test ends, then deletes it.
func startRecorder(t *testing.T, amqpURL string, keep func(h map[string]string) bool) *recorder {
	t.Helper()
	conn, err := amqp.DialConfig(amqpURL, amqp.Config{
		Dial:       amqp.DefaultDial(10 * time.Second),
		Properties: amqp.Table{"connection_name": "e2e.recorder"},
	})
	if err != nil {
		t.Fatalf("dial RabbitMQ: %v", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare(bus.Exchange, "topic", true, false, false, false, nil); err != nil {
		t.Fatalf("declare exchange: %v", err)
	}
	queue := amqptest.Unique("e2e.bus")
	// Durable as the brief asks, but it expires when unused for a while, so a crashed run
	// does not leave a queue collecting every event on this broker.
	args := amqp.Table{"x-expires": int32((10 * time.Minute).Milliseconds())}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, args); err != nil {
		t.Fatalf("declare queue: %v", err)
	}
	if err := ch.QueueBind(queue, "#", bus.Exchange, false, nil); err != nil {
		t.Fatalf("bind queue: %v", err)
	}
	if err := ch.Qos(256, 0, false); err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	rec := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for d := range deliveries {
			h := map[string]string{}
			for k, v := range d.Headers {
				if s, ok := v.(string); ok {
					h[k] = s
				}
			}
			if keep(h) {
				rec.mu.Lock()
				rec.msgs = append(rec.msgs, received{id: d.MessageId, routingKey: d.RoutingKey, headers: h, body: d.Body})
				rec.mu.Unlock()
			}
			if err := d.Ack(false); err != nil {
				rec.mu.Lock()
				rec.errs = append(rec.errs, fmt.Errorf("ack: %w", err))
				rec.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
			t.Errorf("delete queue %s: %v", queue, err)
		}
		_ = conn.Close()
		<-done
	})
	return rec
}

// brokerPorts returns the local ports of pid's TCP connections to the AMQP port: the
// management API names a connection by its peer (our local) port, which is how the test
// closes exactly this apiserver's connections and not those of other servers sharing the
// broker.
func brokerPorts(pid int) (map[int]bool, error) {
	amqpPort := 5672
	if u, err := url.Parse(amqptest.URL()); err == nil && u.Port() != "" {
		amqpPort, _ = strconv.Atoi(u.Port())
	}
	inodes := map[string]bool{}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, fmt.Errorf("list sockets of pid %d: %w", pid, err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, f := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(line)
			if len(fs) < 10 || !inodes[fs[9]] || fs[3] != "01" { // 01: ESTABLISHED
				continue
			}
			local, remote := hexPort(fs[1]), hexPort(fs[2])
			if remote == amqpPort {
				ports[local] = true
			}
		}
	}
	return ports, nil
}

func hexPort(addr string) int {
	_, p, _ := strings.Cut(addr, ":")
	n, _ := strconv.ParseInt(p, 16, 32)
	return int(n)
}

// closeBrokerConnections force-closes, through the management API, every broker
// connection of pid, as a broker restart or a network cut would. It returns the closed
// connections' local ports.
func closeBrokerConnections(t *testing.T, pid int) map[int]bool {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ports, err := brokerPorts(pid)
		if err != nil {
			t.Fatal(err)
		}
		// The management API's view lags behind new connections by a few seconds.
		names, err := mgmtConnections(t.Context(), ports)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) > 0 && len(names) == len(ports) {
			for _, n := range names {
				if err := mgmt(t.Context(), http.MethodDelete, "/api/connections/"+url.PathEscape(n), nil); err != nil {
					t.Fatalf("close connection %s: %v", n, err)
				}
			}
			t.Logf("closed the apiserver's broker connections %v", names)
			return ports
		}
		if time.Now().After(deadline) {
			t.Fatalf("the apiserver (pid %d) has broker connections on local ports %v, but the management API lists %v of them", pid, ports, names)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// mgmtConnections returns the management API names of connections whose peer port is in
// ports.
func mgmtConnections(ctx context.Context, ports map[int]bool) ([]string, error) {
	var conns []struct {
		Name     string `json:"name"`
		PeerPort int    `json:"peer_port"`
		PeerHost string `json:"peer_host"`
	}
	if err := mgmt(ctx, http.MethodGet, "/api/connections?columns=name,peer_port,peer_host", &conns); err != nil {
		return nil, err
	}
	var names []string
	for _, c := range conns {
		if ports[c.PeerPort] && (c.PeerHost == "127.0.0.1" || c.PeerHost == "::1" || strings.HasPrefix(c.PeerHost, "::ffff:127.")) {
			names = append(names, c.Name)
		}
	}
	return names, nil
}

// mgmt calls the RabbitMQ management API and decodes the answer into out, if given.
func mgmt(ctx context.Context, method, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	base := amqptest.ManagementURL()
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		return err
	}
	if u.User != nil {
		p, _ := u.User.Password()
		req.SetBasicAuth(u.User.Username(), p)
	}
	req.Header.Set("X-Reason", "minik8s e2e test: simulated connection loss")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s (is the management plugin on?): %w", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return nil
}
