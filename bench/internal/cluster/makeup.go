package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	mclient "minik8s.io/shared/client"
	"minik8s.io/shared/kubeconfig"
)

// MakeUp is make up's cluster as a suite measures it: a client, and a namespace of the suite's
// own.
type MakeUp struct {
	API       *mclient.Client
	Config    *mclient.Config
	Namespace string
}

// ConnectMakeUp connects to the cluster of the kubeconfig at path (default $KUBECONFIG, else
// $MINIK8S_HOME/kubeconfig) and creates a namespace named prefix plus a number. The returned
// func deletes it. suite names the suite in the error that says the cluster must run.
func ConnectMakeUp(ctx context.Context, path, suite, prefix string, log *slog.Logger) (*MakeUp, func(), error) {
	needed := func(err error) error {
		return fmt.Errorf("the %s suite measures the cluster of make up, which must be running: %w", suite, err)
	}
	if path == "" {
		path = kubeconfig.DefaultPath()
	}
	cfg, err := mclient.FromKubeconfig(path)
	if err != nil {
		return nil, nil, needed(err)
	}
	api, err := mclient.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e6)
	nss := mclient.MustFor[*corev1.Namespace, *corev1.NamespaceList](api)
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, nil, needed(err)
	}
	cleanup := func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := nss.Delete(dctx, "", ns, metav1.DeleteOptions{}); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			log.Warn("delete namespace", "namespace", ns, "err", err)
		}
	}
	return &MakeUp{API: api, Config: cfg, Namespace: ns}, cleanup, nil
}
