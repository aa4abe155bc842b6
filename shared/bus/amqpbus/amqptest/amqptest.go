package amqptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"minik8s.io/shared/bus/amqpbus"
)

// URL is the broker for integration tests: $MINIK8S_AMQP_URL or
// amqpbus.DefaultURL.
func URL() string {
	if u := os.Getenv("MINIK8S_AMQP_URL"); u != "" {
		return u
	}
	return amqpbus.DefaultURL
}

// ManagementURL is the management API base: $MINIK8S_AMQP_MANAGEMENT_URL or
// http://guest:guest@127.0.0.1:15672.
func ManagementURL() string {
	if u := os.Getenv("MINIK8S_AMQP_MANAGEMENT_URL"); u != "" {
		return strings.TrimSuffix(u, "/")
	}
	return "http://guest:guest@127.0.0.1:15672"
}

// Require returns the broker URL, skipping under -short and failing the test
// with a clear message when the broker cannot be reached.
func Require(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test needs RabbitMQ; skipped under -short")
	}
	u := URL()
	conn, err := amqp.DialConfig(u, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		t.Fatalf("RabbitMQ unreachable at %s (set MINIK8S_AMQP_URL, or run with -short to skip): %v", u, err)
	}
	_ = conn.Close()
	return u
}

// Unique returns a name for test-private exchanges and connection names.
func Unique(prefix string) string {
	return fmt.Sprintf("%s.%d.%08x", prefix, time.Now().UnixNano()%1e6, rand.Uint32())
}

// api is a management API call that returns the body, a 404 included (as no error).
func api(ctx context.Context, method, path string) ([]byte, error) {
	body, err := amqpbus.Management{URL: ManagementURL()}.Do(ctx, method, path, nil)
	if errors.Is(err, amqpbus.ErrNotFound) {
		return body, nil
	}
	return body, err
}

// CloseConnections forcibly closes every broker connection whose
// client-provided name starts with prefix, as a broker restart would. Only
// those: other tests share the broker. Management statistics lag behind new
// connections, so it polls until at least one matches and fails the test if
// none ever does.
func CloseConnections(t *testing.T, prefix string) int {
	t.Helper()
	n, err := CloseConnectionsContext(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("closed %d broker connections named %s*", n, prefix)
	return n
}

// CloseConnectionsContext is CloseConnections for use off the test goroutine:
// it returns an error instead of failing the test.
func CloseConnectionsContext(ctx context.Context, prefix string) (int, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		names, err := connections(ctx, prefix)
		if err != nil {
			return 0, err
		}
		for _, name := range names {
			if _, err := api(ctx, http.MethodDelete, "/api/connections/"+url.PathEscape(name)); err != nil {
				return 0, fmt.Errorf("close connection %s: %w", name, err)
			}
		}
		if len(names) > 0 {
			return len(names), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no broker connection named %s* appeared in the management API", prefix)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// WaitForConnection waits until the management API lists a connection whose
// name starts with prefix, so that a later CloseConnections acts at once.
func WaitForConnection(t *testing.T, prefix string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		names, err := connections(t.Context(), prefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no broker connection named %s* appeared in the management API", prefix)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// connections returns the server-side names of connections whose
// client-provided name starts with prefix.
func connections(ctx context.Context, prefix string) ([]string, error) {
	body, err := api(ctx, http.MethodGet, "/api/connections?columns=name,client_properties")
	if err != nil {
		return nil, fmt.Errorf("list connections via management API (is the management plugin on?): %w", err)
	}
	var conns []struct {
		Name             string `json:"name"`
		ClientProperties struct {
			ConnectionName string `json:"connection_name"`
		} `json:"client_properties"`
	}
	if err := json.Unmarshal(body, &conns); err != nil {
		return nil, fmt.Errorf("decode connections: %w", err)
	}
	var names []string
	for _, c := range conns {
		if strings.HasPrefix(c.ClientProperties.ConnectionName, prefix) {
			names = append(names, c.Name)
		}
	}
	return names, nil
}

// DeleteExchange removes exchange and every queue bound to it; tests register
// it with t.Cleanup so private topologies do not pile up in the broker.
func DeleteExchange(t testing.TB, exchange string) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	path := "/api/exchanges/%2F/" + url.PathEscape(exchange)
	body, err := api(ctx, http.MethodGet, path+"/bindings/source")
	if err != nil {
		t.Errorf("list bindings of %s: %v", exchange, err)
		return
	}
	var bindings []struct {
		Destination     string `json:"destination"`
		DestinationType string `json:"destination_type"`
	}
	_ = json.Unmarshal(body, &bindings)
	seen := map[string]bool{}
	for _, b := range bindings {
		if b.DestinationType != "queue" || seen[b.Destination] {
			continue
		}
		seen[b.Destination] = true
		if _, err := api(ctx, http.MethodDelete, "/api/queues/%2F/"+url.PathEscape(b.Destination)); err != nil {
			t.Errorf("delete queue %s: %v", b.Destination, err)
		}
	}
	if _, err := api(ctx, http.MethodDelete, path); err != nil {
		t.Errorf("delete exchange %s: %v", exchange, err)
	}
}

// VHost creates a private virtual host for the test, gives the broker URL's user every
// permission in it, deletes it (with whatever the test declared there) when the test ends,
// and returns URL() addressed to it. A test cluster on its own vhost shares no queue with
// `make up`'s cluster or another test's.
func VHost(t testing.TB) string {
	t.Helper()
	u, name, err := NewVHost(t.Context(), "minik8s-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := DeleteVHost(context.WithoutCancel(t.Context()), name); err != nil {
			t.Errorf("%v", err)
		}
	})
	return u
}

// NewVHost is VHost for what outlives one test (a package's shared server): it creates a
// vhost named after prefix and returns its URL and name; DeleteVHost removes it.
func NewVHost(ctx context.Context, prefix string) (amqpURL, name string, err error) {
	name = Unique(prefix)
	if amqpURL, err = (amqpbus.Management{URL: ManagementURL()}).VHostFor(ctx, URL(), name); err != nil {
		return "", "", fmt.Errorf("%w (is the rabbitmq_management plugin enabled? make up enables it)", err)
	}
	return amqpURL, name, nil
}

// DeleteVHost deletes a vhost NewVHost made, with everything in it.
func DeleteVHost(ctx context.Context, name string) error {
	return amqpbus.Management{URL: ManagementURL()}.DeleteVHost(ctx, name)
}

// DeleteQueue removes a queue of the default vhost that the test declared.
func DeleteQueue(t testing.TB, queue string) {
	t.Helper()
	if _, err := api(context.WithoutCancel(t.Context()), http.MethodDelete, "/api/queues/%2F/"+url.PathEscape(queue)); err != nil {
		t.Errorf("delete queue %s: %v", queue, err)
	}
}

// QueueState is what the management API says of a queue: whether it exists, and how many of
// its messages wait for a consumer and how many are delivered but not acknowledged. The
// broker refreshes these counts every few seconds, so callers poll.
func QueueState(ctx context.Context, vhost, queue string) (exists bool, ready, unacked int, err error) {
	body, err := api(ctx, http.MethodGet, "/api/queues/"+url.PathEscape(vhost)+"/"+url.PathEscape(queue))
	if err != nil {
		return false, 0, 0, err
	}
	var q struct {
		Name    string `json:"name"`
		Ready   int    `json:"messages_ready"`
		Unacked int    `json:"messages_unacknowledged"`
	}
	if err := json.Unmarshal(body, &q); err != nil || q.Name == "" {
		return false, 0, 0, nil // 404: api returns the error body, which names no queue
	}
	return true, q.Ready, q.Unacked, nil
}

// Consumers is how many consumers queue has on the broker at amqpURL, from a passive declare
// (exact at once, unlike the management API's counts); a queue that does not exist is an error.
func Consumers(amqpURL, queue string) (int, error) {
	conn, err := amqp.DialConfig(amqpURL, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		return 0, err
	}
	return q.Consumers, nil
}
