package clients

import (
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Python client (clients/session-api-python)", func() {
	It("serves the stdlib-only Python client: append, retry, read, page, conflict, follow, reset, no redirect", func() {
		python, err := exec.LookPath("python3")
		if err != nil {
			Skip("python3 is not installed")
		}
		ns := env.AgentNamespace()
		conv := env.LiveConversation(ns, "conv")
		cmd := exec.CommandContext(env.Ctx, python, filepath.Join(env.RepoRoot, "clients", "session-api-python", "check_client.py"))
		cmd.Env = append(os.Environ(), "PARLEY_API_URL="+env.SessionURL, "PARLEY_TOKEN="+env.AgentToken(ns, "agent", env.AgentPodOf(conv)),
			"PARLEY_NS="+ns, "PARLEY_NAME="+conv.Name, "PARLEY_RESET_TOKEN="+env.EditorToken(ns))
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(string(out)).To(ContainSubstring("state, resume, import (idempotent by id), reset (403 without delete, idempotent by id), a redirect followed nowhere (the token stays home): ok"))
	})
})
