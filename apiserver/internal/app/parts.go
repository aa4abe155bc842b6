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

// newOpenAPI builds the OpenAPI v3 documents and the v2 one, from the served Go types.
func newOpenAPI() (*openapi.Documents, *openapi.V2, error) {
	docs, err := openapi.Build(scheme.Served(), server.Version.GitVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("build openapi documents: %w", err)
	}
	v2, err := openapi.BuildV2(scheme.Served(), server.Version.GitVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("build openapi v2 document: %w", err)
	}
	return docs, v2, nil
}

func newOutbox(cli *clientv3.Client, amqpURL string, log *slog.Logger) (*outbox.Outbox, *amqpbus.Bus, error) {
	b := amqpbus.New(amqpbus.Config{URL: amqpURL, Name: "apiserver", Logger: log.With("component", "bus")})
	ob, err := outbox.New(outbox.Config{Client: cli, Publisher: b, Logger: log, Registerer: server.Registry})
	if err != nil {
		return nil, nil, err
	}
	return ob, b, nil
}
