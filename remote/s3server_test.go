package remote

import (
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/sessionfs/sessionfs/internal/s3server"
)

const (
	testBucket = s3server.Bucket
	testAccess = s3server.Access
	testSecret = s3server.Secret
)

func startS3(t *testing.T) string           { return s3server.Start(t) }
func testClient(t *testing.T) *minio.Client { return s3server.Client(t) }
func freeAddr(t *testing.T) string          { return s3server.FreeAddr(t) }
