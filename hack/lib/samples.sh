# Sourced by hack/run-local.sh and hack/check-run-local.sh: what "the samples are up" means.
# A Conversation of config/samples is up when its phase is Active, a Checkpoint when it is
# Ready; anything else (Pending on a missing Secret or bucket, Failed) is a sample that does not
# work on the local cluster.

# samples_not_up ROOT: one line per Conversation or Checkpoint of ROOT/config/samples that is not
# up, "kind/name phase: the reasons of its Ready and HistoryAvailable conditions that are not True"; nothing when all are up.
# go-template, not jsonpath: an object without a status yet ranges over nothing instead of failing.
samples_not_up() {
  kubectl get -k "$1/config/samples" -o go-template='{{range .items}}{{$phase := ""}}{{with .status}}{{with .phase}}{{$phase = .}}{{end}}{{end}}{{if or (and (eq .kind "Conversation") (ne $phase "Active")) (and (eq .kind "Checkpoint") (ne $phase "Ready"))}}{{.kind}}/{{.metadata.name}} {{or $phase "(no phase)"}}:{{with .status}}{{range .conditions}}{{if and (ne .status "True") (or (eq .type "Ready") (eq .type "HistoryAvailable"))}} {{.type}}={{.reason}}{{end}}{{end}}{{end}}{{"\n"}}{{end}}{{end}}'
}

# samples_up ROOT: every Conversation and Checkpoint of ROOT/config/samples is up.
samples_up() {
  local not_up
  not_up=$(samples_not_up "$1") && [ -z "$not_up" ]
}
