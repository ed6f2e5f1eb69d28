package main

import "sigs.k8s.io/controller-runtime/pkg/metrics/filters"

// authnAuthzFilter protects the metrics endpoint with TokenReview and SubjectAccessReview, so only
// subjects allowed to GET /metrics (see config/rbac/metrics_reader_role.yaml) can scrape it.
var authnAuthzFilter = filters.WithAuthenticationAndAuthorization
