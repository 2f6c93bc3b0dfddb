package modal

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	modalsdk "github.com/modal-labs/modal-client/go"
	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Client is one authenticated connection to Modal's control plane, shared by the SDK and the Volume file RPCs.
type Client struct {
	CP     pb.ModalClientClient
	SDK    *modalsdk.Client
	Config Config
	conn   *grpc.ClientConn
}

// Dial connects to cfg.ServerURL (http:// means plaintext) and hands the connection to the SDK.
func Dial(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.ServerURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("MODAL_SERVER_URL %q is not a URL", cfg.ServerURL)
	}
	creds := credentials.NewClientTLSFromCert(nil, "")
	if u.Scheme == "http" {
		creds = insecure.NewCredentials()
	}
	headers := metadata.Pairs("x-modal-token-id", cfg.TokenID, "x-modal-token-secret", cfg.TokenSecret,
		"x-modal-client-type", "4", "x-modal-client-version", "1.0.0")
	conn, err := grpc.NewClient(u.Host,
		grpc.WithTransportCredentials(creds),
		grpc.WithChainUnaryInterceptor(withHeaders(headers), retryUnavailable),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(metadata.NewOutgoingContext(ctx, metadata.Join(outgoing(ctx), headers)), desc, cc, method, opts...)
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(100<<20), grpc.MaxCallSendMsgSize(100<<20)))
	if err != nil {
		return nil, fmt.Errorf("connect to Modal at %s: %w", cfg.ServerURL, err)
	}
	cp := pb.NewModalClientClient(conn)
	// Sandboxes run on Modal's stable (V1) backend unless the user chose otherwise: the SDK's default, the V2
	// backend, is marked experimental. The SDK reads this choice only from its environment variable.
	if os.Getenv("MODAL_SANDBOX_V2") == "" {
		_ = os.Setenv("MODAL_SANDBOX_V2", "false")
	}
	sdk, err := modalsdk.NewClientWithOptions(&modalsdk.ClientParams{TokenID: cfg.TokenID, TokenSecret: cfg.TokenSecret,
		Environment: cfg.Environment, ControlPlaneClient: cp})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("Modal SDK: %w", err)
	}
	return &Client{CP: cp, SDK: sdk, Config: cfg, conn: conn}, nil
}

// Close releases the connection.
func (c *Client) Close() error {
	c.SDK.Close()
	return c.conn.Close()
}

func outgoing(ctx context.Context) metadata.MD {
	md, _ := metadata.FromOutgoingContext(ctx)
	return md
}

func withHeaders(h metadata.MD) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(metadata.NewOutgoingContext(ctx, metadata.Join(outgoing(ctx), h)), method, req, reply, cc, opts...)
	}
}

// retryUnavailable retries calls the server could not take (Unavailable, and the like), with backoff.
func retryUnavailable(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := invoker(ctx, method, req, reply, cc, opts...)
		code := status.Code(err)
		if err == nil || attempt == 5 || (code != codes.Unavailable && code != codes.Aborted && code != codes.Internal) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay *= 2
	}
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
