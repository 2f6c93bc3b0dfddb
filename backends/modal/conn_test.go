package modal

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"

	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/backends/modal/modaltest"
)

// Every RPC, the Volume file RPCs the SDK does not wrap too, carries what the Go SDK sends: its client type and
// versions, the auth token, an idempotency key. The fake refuses a call without them.
func TestEveryRPCGoesThroughTheSDK(t *testing.T) {
	f := setup(t)
	f.write(t, "workspace/a.txt", []byte("a"))
	_, err := f.sync.Push(context.Background())
	require.NoError(t, err)
	for _, m := range []string{"VolumeGetOrCreate", "VolumePutFiles2", "VolumeListFiles2"} {
		md := f.fake.Headers(m)
		require.NotNil(t, md, m)
		assert.Equal(t, []string{strconv.Itoa(int(pb.ClientType_CLIENT_TYPE_LIBMODAL_GO))}, md.Get("x-modal-client-type"), m)
		assert.Regexp(t, `^modal-go/\d+\.\d+\.\d+$`, md.Get("x-modal-libmodal-version")[0], m)
	}
	md := f.fake.Headers("VolumePutFiles2")
	assert.NotEmpty(t, md.Get("x-idempotency-key"))
	assert.NotEmpty(t, md.Get("x-modal-auth-token"))
}

// A call whose reply was lost is retried with the same idempotency key, and the service does it once: one
// sandbox, one commit.
func TestLostRepliesAreRetriedOnce(t *testing.T) {
	f := setup(t)
	f.write(t, "workspace/a.txt", []byte("a"))
	f.fake.LoseReplies("VolumePutFiles2", 1)
	f.fake.LoseReplies("SandboxCreate", 1)
	code, err := f.backend(t, Options{}).Run(context.Background(), backends.Spec{SessionID: "s1", SessionDir: f.dir,
		Argv: []string{"sh", "-c", "cat a.txt"}})
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, 1, f.fake.Calls("SandboxCreate"), "one sandbox, though the create was sent twice")
	assert.Equal(t, 1, f.fake.Sandboxes())
}

// The SDK's choice of sandbox backend is made for our client only: the process environment is left as it was.
func TestDialLeavesTheEnvironment(t *testing.T) {
	f := setup(t)
	_, set := os.LookupEnv("MODAL_SANDBOX_V2")
	assert.False(t, set)
	code, err := f.backend(t, Options{}).Run(context.Background(), backends.Spec{SessionID: "s1", SessionDir: f.dir, Argv: []string{"true"}})
	require.NoError(t, err, "the fake serves only the V1 sandbox RPCs")
	assert.Equal(t, 0, code)
	_, set = os.LookupEnv("MODAL_SANDBOX_V2")
	assert.False(t, set)
}

// An OAuth profile of ~/.modal.toml is used as the SDK uses it.
func TestOAuthProfile(t *testing.T) {
	fake, err := modaltest.Start()
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	useServer(t, "")
	p := filepath.Join(t.TempDir(), "modal.toml")
	require.NoError(t, os.WriteFile(p, []byte(`[work]
oauth_refresh_token = "`+modaltest.OAuthRefreshToken+`"
oauth_client_id = "`+modaltest.OAuthClientID+`"
oauth_client_secret = "`+modaltest.OAuthClientSecret+`"
server_url = "`+fake.URL+`"
active = true
`), 0o600))
	t.Setenv("MODAL_CONFIG_PATH", p)
	os.Unsetenv("MODAL_SERVER_URL")
	c, err := Connect()
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Ping(context.Background()))
	assert.Equal(t, []string{modaltest.OAuthClientID}, fake.Headers("VolumeGetOrCreate").Get("x-modal-oauth-client-id"))
}
