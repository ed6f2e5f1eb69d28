package apibench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// raw writes 1 KiB objects with the conditional writes the history stores use, one key per
// writer: S3 PUT with If-None-Match: * and then If-Match: <etag> (minio-go, as pkg/history/s3
// does); ConfigMap create and then merge patches carrying the resourceVersion (as
// pkg/history/configmap does). Every write differs (S3 ETags are content hashes).
type raw struct {
	write    func(w int) error
	versions []string
}

func newRaw(b *testing.B, backend, run string) *raw {
	ctx := context.Background()
	r := &raw{versions: make([]string, rawWriters)}
	var seq atomic.Int64
	body := func(w int) []byte {
		data := bytes.Repeat([]byte("x"), 1<<10)
		copy(data, fmt.Sprintf("%d-%d ", w, seq.Add(1)))
		return data
	}
	switch backend {
	case "s3":
		// The transport pkg/history/s3 uses: enough idle connections for every writer.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
		mc, err := minio.New(s3srv.Endpoint, &minio.Options{
			Creds: credentials.NewStaticV4(s3srv.AccessKey, s3srv.SecretKey, ""), BucketLookup: minio.BucketLookupPath,
			Transport: tr, MaxRetries: 5,
		})
		if err != nil {
			b.Fatal(err)
		}
		put := func(w int, data []byte, create bool) (string, error) {
			opts := minio.PutObjectOptions{DisableMultipart: true, ContentType: "application/x-ndjson"}
			if create {
				opts.SetMatchETagExcept("*")
			} else {
				opts.SetMatchETag(r.versions[w])
			}
			info, err := mc.PutObject(ctx, bucket, fmt.Sprintf("raw/%s/%d", run, w), bytes.NewReader(data), int64(len(data)), opts)
			return info.ETag, err
		}
		for w := range rawWriters {
			v, err := put(w, body(w), true)
			if err != nil {
				b.Fatal(err)
			}
			r.versions[w] = v
		}
		r.write = func(w int) error {
			v, err := put(w, body(w), false)
			r.versions[w] = v
			return err
		}
	case "configmap":
		for w := range rawWriters {
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("raw-%s-%d", run, w)},
				Data:       map[string]string{"data": string(body(w))},
			}
			if err := harness.Create(ctx, cm); err != nil {
				b.Fatal(err)
			}
			r.versions[w] = cm.ResourceVersion
		}
		r.write = func(w int) error {
			patch, _ := json.Marshal(map[string]any{
				"metadata": map[string]any{"resourceVersion": r.versions[w]},
				"data":     map[string]string{"data": string(body(w))},
			})
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("raw-%s-%d", run, w)}}
			if err := harness.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return err
			}
			r.versions[w] = cm.ResourceVersion
			return nil
		}
	}
	return r
}

func clientKey(o client.Object) client.ObjectKey { return client.ObjectKeyFromObject(o) }
