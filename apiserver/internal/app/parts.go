package app

import (
	"fmt"
	"log/slog"

	clientv3 "go.etcd.io/etcd/client/v3"

	"minik8s.io/apiserver/internal/openapi"
	"minik8s.io/apiserver/internal/outbox"
	"minik8s.io/apiserver/internal/server"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/scheme"
)

// newOpenAPI builds the OpenAPI v3 documents and the v2 one of the built-in kinds, from
// their Go types; the server adds custom resources' as their definitions come.
func newOpenAPI() (*openapi.Builtin, error) {
	docs, err := openapi.BuildBuiltin(scheme.Served(), server.Version.GitVersion)
	if err != nil {
		return nil, fmt.Errorf("build openapi documents: %w", err)
	}
	return docs, nil
}

func newOutbox(cli *clientv3.Client, amqpURL string, log *slog.Logger) (*outbox.Outbox, *amqpbus.Bus, error) {
	b := amqpbus.New(amqpbus.Config{URL: amqpURL, Name: "apiserver", Logger: log.With("component", "bus")})
	ob, err := outbox.New(outbox.Config{Client: cli, Publisher: b, Logger: log, Registerer: server.Registry})
	if err != nil {
		return nil, nil, err
	}
	return ob, b, nil
}
