package s3

import (
	"context"
	"net"
)

// WithDial sets the transport's dialer, to reach virtual-host names without DNS.
func WithDial(cfg Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) Config {
	cfg.dial = dial
	return cfg
}
