package s3

import (
	"strings"
	"testing"
)

func TestEndpointForms(t *testing.T) {
	tests := map[string]struct {
		cfg        Config
		wantHost   string
		wantSecure bool
		wantErr    string
	}{
		"host and port, TLS by default": {cfg: Config{Endpoint: "s3.example.com:9000"}, wantHost: "s3.example.com:9000", wantSecure: true},
		"host and port, insecure":       {cfg: Config{Endpoint: "minio:9000", Insecure: true}, wantHost: "minio:9000"},
		"https URL":                     {cfg: Config{Endpoint: "https://s3.example.com"}, wantHost: "s3.example.com", wantSecure: true},
		"http URL":                      {cfg: Config{Endpoint: "http://127.0.0.1:7070/"}, wantHost: "127.0.0.1:7070"},
		"a path":                        {cfg: Config{Endpoint: "https://s3.example.com/bucket"}, wantErr: "must not have a path"},
		"another scheme":                {cfg: Config{Endpoint: "ftp://s3.example.com"}, wantErr: "neither http nor https"},
		"credentials in a URL":          {cfg: Config{Endpoint: "https://AKIA:s3cr3t@s3.example.com"}, wantErr: "must not carry credentials"},
		"credentials without a scheme":  {cfg: Config{Endpoint: "AKIA:s3cr3t@minio:9000"}, wantErr: "must not carry credentials"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			host, secure, err := tc.cfg.endpoint()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Fatalf("the error repeats the secret: %v", err)
				}
				return
			}
			if err != nil || host != tc.wantHost || secure != tc.wantSecure {
				t.Fatalf("endpoint() = %q %v %v, want %q %v", host, secure, err, tc.wantHost, tc.wantSecure)
			}
		})
	}
}
