package modal

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	modalsdk "github.com/modal-labs/modal-client/go"
	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Client is one connection to Modal's control plane: the SDK's own, with its interceptors (its client headers,
// auth token, idempotency keys, retries and server retry hints, keepalive, window sizes). The Volume file RPCs the
// SDK does not wrap go through that same connection, so every RPC is sent exactly as the SDK sends its own.
type Client struct {
	SDK    *modalsdk.Client
	Config Config

	target string                          // host:port of the control plane
	conn   atomic.Pointer[grpc.ClientConn] // the SDK's control-plane connection, once seen
}

// sdkEnv serialises the construction of SDK clients: the SDK reads the sandbox backend choice from its
// environment only, so Dial sets it around the construction and restores it at once.
var sdkEnv sync.Mutex

// Dial builds the SDK client for cfg (as LoadConfig read it: the SDK resolves the server URL from
// MODAL_SERVER_URL or the profile, as cfg did). Sandboxes run on Modal's stable (V1) backend unless the user chose
// otherwise (MODAL_SANDBOX_V2, or sandbox_v2 in the profile): the SDK's default, V2, is still experimental.
func Dial(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.ServerURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("MODAL_SERVER_URL %q is not an http(s) URL", cfg.ServerURL)
	}
	// The target as the SDK dials it (newClient in client.go): the URL without its scheme.
	target := strings.TrimPrefix(strings.TrimPrefix(cfg.ServerURL, "https://"), "http://")
	c := &Client{Config: cfg, target: target}
	params := &modalsdk.ClientParams{Environment: cfg.Environment,
		GRPCUnaryInterceptors: []grpc.UnaryClientInterceptor{c.seeUnary}}
	if cfg.OAuth != nil {
		params.OAuthCredentials = cfg.OAuth
	} else {
		params.TokenID, params.TokenSecret = cfg.TokenID, cfg.TokenSecret
	}
	sdkEnv.Lock()
	restore := !cfg.SandboxV2Chosen && os.Getenv("MODAL_SANDBOX_V2") == ""
	if restore {
		_ = os.Setenv("MODAL_SANDBOX_V2", "false")
	}
	sdk, err := modalsdk.NewClientWithOptions(params)
	if restore {
		_ = os.Unsetenv("MODAL_SANDBOX_V2")
	}
	sdkEnv.Unlock()
	if err != nil {
		return nil, fmt.Errorf("Modal SDK: %w", err)
	}
	c.SDK = sdk
	return c, nil
}

// seeUnary notes the SDK's control-plane connection the first time an RPC passes through it (the interceptor
// runs after the SDK's own, for every attempt).
func (c *Client) seeUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if c.conn.Load() == nil && cc.Target() == c.target {
		c.conn.CompareAndSwap(nil, cc)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// control returns a client for the RPCs the SDK does not wrap, on the SDK's own connection: each call passes
// through the SDK's interceptors. It needs one SDK call to have been made first (Volumes.FromName is).
func (c *Client) control() (pb.ModalClientClient, error) {
	cc := c.conn.Load()
	if cc == nil {
		return nil, errors.New("modal: no control-plane connection yet")
	}
	return pb.NewModalClientClient(cc), nil
}

// Close releases the connections.
func (c *Client) Close() error {
	c.SDK.Close()
	return nil
}

// Ping asks the server something harmless (does a Volume exist; it is never created): an answer, found or
// not, proves the network, the credentials and the environment.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.SDK.Volumes.FromName(ctx, "sessionfs-doctor-probe", &modalsdk.VolumeFromNameParams{Environment: c.Config.Environment})
	if errors.As(err, new(modalsdk.NotFoundError)) {
		return nil
	}
	return Explain(err, c.Config)
}

// Explain turns a Modal error into one line a user can act on.
func Explain(err error, cfg Config) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err) // finds a status anywhere in the chain
	if !ok {
		return err
	}
	msg := strings.Join(strings.Fields(st.Message()), " ")
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded:
		return fmt.Errorf("cannot reach Modal at %s (check the network or MODAL_SERVER_URL): %s", cfg.ServerURL, msg)
	case codes.Unauthenticated, codes.PermissionDenied:
		return fmt.Errorf("Modal refused the credentials (check MODAL_TOKEN_ID/MODAL_TOKEN_SECRET or ~/.modal.toml): %s", msg)
	case codes.ResourceExhausted:
		return fmt.Errorf("Modal quota exceeded: %s", msg)
	}
	return fmt.Errorf("Modal: %s: %s", st.Code(), msg)
}

// Connect dials Modal with the configuration read the Modal way (LoadConfig).
func Connect() (*Client, error) {
	cfg, err := LoadConfig()
	if err != nil {
		return nil, err
	}
	return Dial(cfg)
}
