package distribute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/serverless/internal/imagestore"
	"minik8s.io/shared/kubeletclient"
)

// Config is what a Distributor needs; Images and Token are required.
type Config struct {
	// Images is the local engine images are sent from: an image's id there is compared with
	// the node's, and its archive (Save) is what the node's kubelet loads.
	Images imagestore.Store
	// Token is the bearer token sent to kubelets: the serverless component's own (user
	// system:serverless), which kubelets allow to load images.
	Token string
	// HTTP reaches kubelets (kubeletclient.NewHTTP(5s) when nil).
	HTTP *http.Client
	// Timeout bounds the check and upload on one node (10 minutes when zero).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Distributor sends images to nodes. New does no I/O.
type Distributor struct {
	cfg Config

	mu       sync.Mutex
	inFlight map[string]*upload // by node and image
}

// upload is one node's transfer of one image that concurrent Ensure calls share.
type upload struct {
	done chan struct{}
	res  NodeResult
}

// New returns a Distributor.
func New(cfg Config) *Distributor {
	if cfg.HTTP == nil {
		cfg.HTTP = kubeletclient.NewHTTP(5 * time.Second)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Distributor{cfg: cfg, inFlight: map[string]*upload{}}
}

// NodeResult is what Ensure did on one node.
type NodeResult struct {
	Node string
	// Sent is true when the node lacked the image and it was loaded there.
	Sent bool
	// Skipped is true for a node that is not Ready (nothing asked).
	Skipped bool
	Err     error
}

// Ensure makes image present in the engine of every Ready node among nodes (the nodes that
// will run the function's pods, or all of them): each kubelet is asked whether its engine has
// the image, and those that lack it (or hold another image under its tag) get the local
// engine's archive of it (docker save's format), all nodes at once. Where the nodes share the
// local engine (make up), every answer is yes and nothing is sent. Concurrent calls for the
// same node and image share one transfer. It returns what happened on each node (in the order
// given) and an error joining the nodes' failures.
func (d *Distributor) Ensure(ctx context.Context, image string, nodes []*corev1.Node) ([]NodeResult, error) {
	results := make([]NodeResult, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		if !kubeletclient.Ready(n) {
			results[i] = NodeResult{Node: n.Name, Skipped: true}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = d.ensureShared(ctx, image, n)
		}()
	}
	wg.Wait()
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return results, errors.Join(errs...)
}

func (d *Distributor) ensureShared(ctx context.Context, image string, n *corev1.Node) NodeResult {
	key := n.Name + "\x00" + image
	d.mu.Lock()
	u, joined := d.inFlight[key]
	if !joined {
		u = &upload{done: make(chan struct{})}
		d.inFlight[key] = u
	}
	d.mu.Unlock()
	if joined {
		select {
		case <-u.done:
			return u.res
		case <-ctx.Done():
			return NodeResult{Node: n.Name, Err: fmt.Errorf("image %s on node %s: %w", image, n.Name, ctx.Err())}
		}
	}
	u.res = d.ensure(ctx, image, n)
	d.mu.Lock()
	delete(d.inFlight, key)
	d.mu.Unlock()
	close(u.done)
	return u.res
}

// ensure checks one node and sends the image when it lacks it.
func (d *Distributor) ensure(ctx context.Context, image string, n *corev1.Node) NodeResult {
	res := NodeResult{Node: n.Name}
	fail := func(err error) NodeResult {
		res.Err = fmt.Errorf("image %s on node %s: %w", image, n.Name, err)
		return res
	}
	base, err := kubeletclient.URL(n)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	local, err := d.cfg.Images.Inspect(ctx, image)
	if err != nil {
		return fail(fmt.Errorf("inspect the image in the local engine: %w", err))
	}
	// A node may hold another image under this tag: a function deleted and made again
	// counts its versions from 1 again. It is sent unless the node's id is the local one (a
	// kubelet that does not tell the id is trusted on the tag).
	present, id, err := d.present(ctx, base, image)
	if err != nil {
		return fail(err)
	}
	if present && (id == "" || id == local.ID) {
		return res
	}
	start := time.Now()
	if err := d.send(ctx, base, image); err != nil {
		return fail(err)
	}
	res.Sent = true
	d.cfg.Logger.Info("image sent", "image", image, "node", n.Name, "took", time.Since(start).Round(time.Millisecond))
	return res
}

// imagePath is the kubelet's path for an image reference, each part escaped.
func imagePath(image string) string {
	parts := strings.Split(image, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/images/" + strings.Join(parts, "/")
}

// present asks the node's kubelet whether its engine has image, and its id there.
func (d *Distributor) present(ctx context.Context, base *url.URL, image string) (bool, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.String()+imagePath(image), nil)
	if err != nil {
		return false, "", err
	}
	resp, err := d.do(req)
	if err != nil {
		return false, "", err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		var p struct {
			ID string `json:"id"`
		}
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&p)
		return true, p.ID, nil
	case http.StatusNotFound:
		return false, "", nil
	}
	return false, "", kubeletError("ask the kubelet for the image", resp)
}

func (d *Distributor) send(ctx context.Context, base *url.URL, image string) error {
	archive, err := d.cfg.Images.Save(ctx, image)
	if err != nil {
		return fmt.Errorf("save the image from the local engine: %w", err)
	}
	defer archive.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base.String()+"/images", archive)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := d.do(req)
	if err != nil {
		return fmt.Errorf("send the image: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return kubeletError("load the image", resp)
	}
	var loaded struct {
		Loaded []string `json:"loaded"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&loaded); err != nil {
		return fmt.Errorf("load the image: the kubelet's answer: %w", err)
	}
	if !slices.Contains(loaded.Loaded, image) {
		return fmt.Errorf("load the image: the kubelet loaded %v, not %s", loaded.Loaded, image)
	}
	return nil
}

func (d *Distributor) do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+d.cfg.Token)
	return d.cfg.HTTP.Do(req)
}

// kubeletError says why a kubelet refused, with its message.
func kubeletError(what string, resp *http.Response) error {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	text := strings.TrimSpace(string(msg))
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return fmt.Errorf("%s: the kubelet refused the serverless component's token (%s)", what, text)
	case http.StatusForbidden:
		return fmt.Errorf("%s: the kubelet forbids it: %s", what, text)
	}
	return fmt.Errorf("%s: kubelet answered %s: %s", what, resp.Status, text)
}
