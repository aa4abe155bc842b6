package amqpbus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// A RabbitMQ virtual host is a broker of its own: exchanges, queues and permissions live in
// one vhost only. Clusters that share a broker (a benchmark's, a test's and `make up`'s) each
// take their own vhost, so the `scheduler` queue of one never receives another's pods.

// DefaultManagementURL is the management API of the broker at DefaultURL.
const DefaultManagementURL = "http://guest:guest@127.0.0.1:15672"

// Management is a client of RabbitMQ's management HTTP API, for what AMQP itself cannot do:
// creating and deleting virtual hosts.
type Management struct {
	// URL is the API's base, with the credentials as user info; empty means
	// DefaultManagementURL.
	URL string
	// Client may be nil.
	Client *http.Client
}

// CreateVHost creates vhost (if it does not exist yet) and gives user every permission in it.
func (m Management) CreateVHost(ctx context.Context, vhost, user string) error {
	if vhost == "" || vhost == "/" {
		return fmt.Errorf("create vhost: %q is not a vhost of its own", vhost)
	}
	if err := m.do(ctx, http.MethodPut, "/api/vhosts/"+url.PathEscape(vhost), nil); err != nil {
		return fmt.Errorf("create vhost %s: %w", vhost, err)
	}
	perms := map[string]string{"configure": ".*", "write": ".*", "read": ".*"}
	if err := m.do(ctx, http.MethodPut, "/api/permissions/"+url.PathEscape(vhost)+"/"+url.PathEscape(user), perms); err != nil {
		return fmt.Errorf("grant %s on vhost %s: %w", user, vhost, err)
	}
	return nil
}

// VHostFor creates vhost (see CreateVHost) for the user of amqpURL (guest when it names
// none) and returns amqpURL addressed to it: what a cluster's components are given.
func (m Management) VHostFor(ctx context.Context, amqpURL, vhost string) (string, error) {
	u, err := url.Parse(amqpURL)
	if err != nil {
		return "", fmt.Errorf("AMQP URL: %w", err)
	}
	user := "guest"
	if u.User != nil {
		user = u.User.Username()
	}
	if err := m.CreateVHost(ctx, vhost, user); err != nil {
		return "", err
	}
	return WithVHost(amqpURL, vhost)
}

// DeleteVHost deletes vhost with everything in it; a vhost that does not exist is no error.
func (m Management) DeleteVHost(ctx context.Context, vhost string) error {
	if vhost == "" || vhost == "/" {
		return fmt.Errorf("delete vhost: refusing to delete %q", vhost)
	}
	if err := m.do(ctx, http.MethodDelete, "/api/vhosts/"+url.PathEscape(vhost), nil); err != nil {
		return fmt.Errorf("delete vhost %s: %w", vhost, err)
	}
	return nil
}

// CreateUser creates (or re-passwords) a user with no tags: it can log in from anywhere,
// unlike RabbitMQ's guest, which only logs in over loopback. Give it a vhost with CreateVHost.
func (m Management) CreateUser(ctx context.Context, user, password string) error {
	if err := m.do(ctx, http.MethodPut, "/api/users/"+url.PathEscape(user), map[string]string{"password": password, "tags": ""}); err != nil {
		return fmt.Errorf("create user %s: %w", user, err)
	}
	return nil
}

// DeleteUser deletes a user; one that does not exist is no error.
func (m Management) DeleteUser(ctx context.Context, user string) error {
	if err := m.do(ctx, http.MethodDelete, "/api/users/"+url.PathEscape(user), nil); err != nil {
		return fmt.Errorf("delete user %s: %w", user, err)
	}
	return nil
}

// ErrNotFound is wrapped by Management.Do's error for a 404.
var ErrNotFound = errors.New("not found")

// do sends one request and ignores the answer; a 404 on DELETE counts as done.
func (m Management) do(ctx context.Context, method, path string, body any) error {
	_, err := m.Do(ctx, method, path, body)
	if method == http.MethodDelete && errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Do sends one request to the management API: path is already escaped and starts with
// "/api/", body (when not nil) goes as JSON. It returns the response body; a status of 300
// or more is an error, wrapping ErrNotFound for a 404 (the body is returned then too).
func (m Management) Do(ctx context.Context, method, path string, body any) ([]byte, error) {
	base := m.URL
	if base == "" {
		base = DefaultManagementURL
	}
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil {
		return nil, fmt.Errorf("management URL: %w", err)
	}
	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		u.User = nil
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// The path is already escaped; Opaque keeps %2F in a vhost name as it is.
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	req.URL.Opaque = "//" + u.Host + u.EscapedPath() + path
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c := m.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return msg, fmt.Errorf("%s %s: %w", method, path, ErrNotFound)
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(msg))
	}
	return msg, nil
}

// WithVHost returns amqpURL addressed to vhost instead of the vhost it names.
func WithVHost(amqpURL, vhost string) (string, error) {
	u, err := url.Parse(amqpURL)
	if err != nil {
		return "", fmt.Errorf("AMQP URL: %w", err)
	}
	u.Path = "/" + vhost
	u.RawPath = "/" + url.PathEscape(vhost)
	return u.String(), nil
}

// VHostOf is the vhost amqpURL names; "/" when it names none.
func VHostOf(amqpURL string) (string, error) {
	u, err := url.Parse(amqpURL)
	if err != nil {
		return "", fmt.Errorf("AMQP URL: %w", err)
	}
	if u.Path == "" || u.Path == "/" {
		return "/", nil
	}
	return strings.TrimPrefix(u.Path, "/"), nil
}
