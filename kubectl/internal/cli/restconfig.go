package cli

import (
	"k8s.io/client-go/rest"

	"minik8s.io/shared/client"
)

// restConfig is client-go's view of the connection our client uses, for the streaming verbs
// (exec, attach, cp, port-forward), whose WebSocket and SPDY clients only client-go has. It
// also resolves the default namespace, as client() does.
func (o *options) restConfig() (*rest.Config, error) {
	cfg, err := o.clientConfig()
	if err != nil {
		return nil, err
	}
	if o.defaultNS == "" {
		o.defaultNS = cfg.Namespace
	}
	return restConfigFor(cfg), nil
}

// restConfigFor translates a client.Config. Streams have no overall timeout (an exec or a
// port-forward lasts as long as the user wants); client-go refuses a CA together with
// insecure, which our client simply ignores, so the CA is dropped then.
func restConfigFor(cfg *client.Config) *rest.Config {
	rc := &rest.Config{
		Host:        cfg.Server,
		BearerToken: cfg.Token,
		UserAgent:   cfg.UserAgent,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   cfg.Insecure,
			ServerName: cfg.TLSServerName,
		},
		Impersonate: rest.ImpersonationConfig{
			UserName: cfg.Impersonate.UserName,
			UID:      cfg.Impersonate.UID,
			Groups:   cfg.Impersonate.Groups,
		},
	}
	if !cfg.Insecure {
		rc.CAData = cfg.CAData
	}
	return rc
}
