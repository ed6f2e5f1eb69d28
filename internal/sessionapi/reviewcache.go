package sessionapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/cache"

	"github.com/parley-dev/parley/pkg/wire"
)

// reviewCaches hold what reviews answered. Accepted and refused answers live in separate LRU
// caches, each bounded: a flood of junk tokens (or of names a caller may not use) fills the
// refused ones and never evicts a known caller's entry, and a full cache drops its least
// recently used entry, never everything.
type reviewCaches struct {
	tokens, badTokens    *cache.LRUExpireCache // [32]byte (token hash) -> *caller; -> struct{}
	allowed, deniedNames *cache.LRUExpireCache // accessKey -> struct{}
}

type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

func newReviewCaches(maxEntries int, clock clockFunc) *reviewCaches {
	return &reviewCaches{
		tokens:      cache.NewLRUExpireCacheWithClock(maxEntries, clock),
		badTokens:   cache.NewLRUExpireCacheWithClock(maxEntries, clock),
		allowed:     cache.NewLRUExpireCacheWithClock(maxEntries, clock),
		deniedNames: cache.NewLRUExpireCacheWithClock(maxEntries, clock),
	}
}

// token is a cached answer for a token: known says whether there is one, a nil caller that
// the token was refused.
func (c *reviewCaches) token(key [32]byte) (_ *caller, known bool) {
	if v, ok := c.tokens.Get(key); ok {
		return v.(*caller), true
	}
	_, refused := c.badTokens.Get(key)
	return nil, refused
}

func (c *reviewCaches) storeToken(key [32]byte, who *caller, ttl, negativeTTL time.Duration) {
	if who == nil {
		c.badTokens.Add(key, struct{}{}, negativeTTL)
		return
	}
	c.tokens.Add(key, who, ttl)
}

func (c *reviewCaches) access(key string) (allowed, known bool) {
	if _, ok := c.allowed.Get(key); ok {
		return true, true
	}
	_, denied := c.deniedNames.Get(key)
	return false, denied
}

func (c *reviewCaches) storeAccess(key string, allowed bool, ttl time.Duration) {
	if allowed {
		c.allowed.Add(key, struct{}{}, ttl)
		return
	}
	c.deniedNames.Add(key, struct{}{}, ttl)
}

// accessKey names an access answer by everything the authorizer judged: the whole user info
// (username, UID, groups, extra: two tokens of one username with other groups are other
// callers) and the resource attributes. Each part is length-prefixed, so no two inputs share
// a key.
func accessKey(u authnv1.UserInfo, attrs *authzv1.ResourceAttributes) string {
	h := sha256.New()
	part := func(s string) {
		_ = binary.Write(h, binary.BigEndian, uint64(len(s)))
		h.Write([]byte(s))
	}
	part(u.Username)
	part(u.UID)
	list := func(values []string) {
		sorted := slices.Clone(values)
		slices.Sort(sorted)
		part(strconv.Itoa(len(sorted)))
		for _, v := range sorted {
			part(v)
		}
	}
	list(u.Groups)
	part(strconv.Itoa(len(u.Extra)))
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		part(k)
		list(u.Extra[k])
	}
	for _, s := range []string{attrs.Namespace, attrs.Verb, attrs.Group, attrs.Resource, attrs.Subresource, attrs.Name} {
		part(s)
	}
	return string(h.Sum(nil))
}

// reviewAudiences chooses the audiences a token is reviewed for, so that one review decides
// it: a JWT whose aud claim names parley (an agent's projected token) is reviewed for parley;
// any other token (a person's kubeconfig token, an OIDC or cloud token) for the API server's
// own audiences (none given). The claim is read unverified, only to choose what to ask: the
// API server verifies the token against the audience asked.
func reviewAudiences(token string) []string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var claims struct {
		Aud json.RawMessage `json:"aud"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return nil
	}
	var one string
	var many []string
	if json.Unmarshal(claims.Aud, &one) == nil {
		many = []string{one}
	} else if json.Unmarshal(claims.Aud, &many) != nil {
		return nil
	}
	if slices.Contains(many, wire.Audience) {
		return []string{wire.Audience}
	}
	return nil
}
