package sessionapi

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/parley-dev/parley/pkg/wire"
)

// AggregatedGroupVersion is the aggregated group's "group/version".
const AggregatedGroupVersion = wire.AggregatedGroup + "/" + wire.AggregatedVersion

// aggregatedGroupVersion is the group version the APIService v1alpha1.session.parley.dev
// registers.
var aggregatedGroupVersion = metav1.GroupVersionForDiscovery{
	GroupVersion: AggregatedGroupVersion, Version: wire.AggregatedVersion,
}

// aggregatedResources is the aggregated group's discovery: conversations (GET is the summary)
// and one subresource per endpoint, with the verbs the API server authorises each request
// with before it proxies (GET is get, POST create, PUT update). No resource lists, watches or
// deletes: the namespace and garbage-collector controllers, which look for those verbs, leave
// the group alone.
func aggregatedResources() *metav1.APIResourceList {
	const kind = "ConversationHistory"
	sub := func(name string, verbs ...string) metav1.APIResource {
		return metav1.APIResource{Name: "conversations/" + name, Namespaced: true, Kind: kind, Verbs: verbs}
	}
	return &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: aggregatedGroupVersion.GroupVersion,
		APIResources: []metav1.APIResource{
			{Name: "conversations", SingularName: "conversation", Namespaced: true, Kind: kind, Verbs: metav1.Verbs{"get"}},
			sub("messages", "get", "create"),
			sub("log", "get"),
			sub("events", "create"),
			sub("adapter-state", "update"),
			sub("checkpoints", "create"),
			sub("compact", "create"),
			sub("reset", "create"),
			sub("resume", "get"),
			sub("state", "get"),
			sub("import", "create"),
			sub("transcript", "get", "create"),
			sub("transcripts", "get"),
		},
	}
}

func aggregatedGroup() metav1.APIGroup {
	return metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:     wire.AggregatedGroup, Versions: []metav1.GroupVersionForDiscovery{aggregatedGroupVersion},
		PreferredVersion: aggregatedGroupVersion,
	}
}

// routeDiscovery serves the aggregated group's discovery documents, as the aggregator (which
// checks the group version to mark the APIService available) and kubectl read them. They
// describe only the API, so any user the API server authenticated may read them.
func (s *Server) routeDiscovery(mux *http.ServeMux) {
	document := func(v any) http.Handler {
		return instrumented("GET discovery", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, p := s.FrontProxy.authenticate(r); p != nil {
				writeProblem(w, p, 0)
				return
			}
			writeJSON(w, http.StatusOK, v)
		}))
	}
	mux.Handle("GET /apis", document(&metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{aggregatedGroup()},
	}))
	group := aggregatedGroup()
	mux.Handle("GET /apis/"+wire.AggregatedGroup, document(&group))
	mux.Handle("GET "+wire.AggregatedPath, document(aggregatedResources()))
}
