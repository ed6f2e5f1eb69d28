package envtest

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/parley-dev/parley/pkg/wire"
)

var _ = Describe("The agent pod binding", func() {
	It("refuses a token of a pod with the agent pod's name but another UID", func() {
		ns := env.AgentNamespace()
		conv := env.LiveConversation(ns, "conv-uid")
		first := env.AgentPodOf(conv)

		By("the agent pod is deleted and someone creates a pod under its name")
		env.DeleteNow(first)
		second := env.Squatter(ns, first.Name, conv.Name)
		Expect(second.UID).NotTo(Equal(first.UID))

		status, p, _ := rawCall(http.MethodPost, wire.ConversationPath(ns, conv.Name)+"/messages", env.AgentToken(ns, "agent", second),
			[]byte(`{"messages":[{"id":"x","role":"user","blocks":[{"type":"text","text":"intrusion"}]}]}`))
		Expect(status).To(Equal(403))
		Expect(p.Type).To(Equal(wire.ProblemForbidden), "a problem+json body (rawCall checks the media type)")
		Expect(p.Detail).To(ContainSubstring("another pod UID"))
	})
})
