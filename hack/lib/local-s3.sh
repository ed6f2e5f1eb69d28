# Sourced by hack/run-local.sh: a real S3-compatible server for the samples that keep their
# history in an object store, so that they come up on the local cluster like the others.
#
# The server is versitygw, the one the storage tests run (`make s3-server`), started by
# hack/local-cluster as its process "s3" (log logs/s3.log; `make cluster-down` stops it), its data
# and root credentials in the cluster's folder (`hack/local-cluster purge` deletes them). For each
# such sample it creates the bucket and the credentials Secret the sample names. The samples
# name an in-cluster MinIO Service, as a real install would; a host-run manager cannot resolve
# that name and this cluster (no kube-proxy) cannot route Service addresses, so the samples are
# applied through an overlay that points them at this server instead.

# object_store_samples ROOT: "name bucket secret" for each Conversation of ROOT/config/samples
# whose history is in an object store. `kubectl label --local` only reads the objects: it needs
# no cluster and no CRD to print them through a template.
object_store_samples() {
  kubectl kustomize "$1/config/samples" |
    kubectl label --local -f - parley.dev/read-only=true -o go-template='{{if eq .kind "Conversation"}}{{$name := .metadata.name}}{{with .spec.history.objectStore}}{{$name}} {{.bucket}} {{.credentialsSecretRef.name}}{{"\n"}}{{end}}{{end}}'
}

# local_s3_start LC ADDR: (re)starts versitygw on ADDR as hack/local-cluster (LC)'s process "s3"
# and sets s3_access_key and s3_secret_key to its root credentials, made once per cluster folder,
# and s3_log to its log. Like the other functions here, it ends the script with the caller's fail.
local_s3_start() {
  local lc=$1 addr=$2 dir bin
  dir=$(dirname "$("$lc" logs)")/s3
  s3_log=$("$lc" logs)/s3.log
  bin=$(hack/build-binaries.sh s3)/versitygw
  mkdir -p "$dir/data"
  if [ ! -s "$dir/credentials" ]; then
    (
      umask 077
      echo "parley-local $(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$dir/credentials"
    )
  fi
  read -r s3_access_key s3_secret_key <"$dir/credentials"
  "$lc" stop s3
  # The credentials go in the environment, where versitygw reads them; its arguments are public.
  ROOT_ACCESS_KEY=$s3_access_key ROOT_SECRET_KEY=$s3_secret_key "$lc" start s3 "$bin" --port "$addr" --quiet posix "$dir/data"
  local deadline=$((SECONDS + 30))
  until curl -s -o /dev/null "http://$addr/"; do
    ((SECONDS < deadline)) || fail "versitygw does not answer on $addr after 30s; see $s3_log"
    sleep 0.2
  done
}

# local_s3_bucket ADDR BUCKET: creates BUCKET unless it is there (a signed PUT: curl's SigV4, with
# the empty body's hash versitygw wants).
local_s3_bucket() {
  local code
  code=$(curl -sS -o /dev/null -w '%{http_code}' -X PUT --aws-sigv4 aws:amz:us-east-1:s3 \
    --user "$s3_access_key:$s3_secret_key" \
    -H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' \
    "http://$1/$2")
  # 409: BucketAlreadyOwnedByYou, from an earlier run.
  [ "$code" = 200 ] || [ "$code" = 409 ] || fail "creating bucket $2 on $1 answered HTTP $code; see $s3_log"
}

# local_s3_samples ROOT LC ADDR OVERLAY: the server on ADDR, then for each object-store sample
# its bucket, its Secret (accessKeyID, secretAccessKey) and a patch of its endpoint in the
# kustomization written to the folder OVERLAY, which applies config/samples.
local_s3_samples() {
  local root=$1 lc=$2 addr=$3 overlay=$4 samples name bucket secret was
  samples=$(object_store_samples "$root")
  mkdir -p "$overlay"
  printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\n' \
    "$(realpath --relative-to "$overlay" "$root/config/samples")" >"$overlay/kustomization.yaml"
  [ -n "$samples" ] || return 0
  echo 'patches:' >>"$overlay/kustomization.yaml"
  local_s3_start "$lc" "$addr"
  while read -r name bucket secret; do
    local_s3_bucket "$addr" "$bucket"
    kubectl create secret generic "$secret" --from-literal=accessKeyID="$s3_access_key" \
      --from-literal=secretAccessKey="$s3_secret_key" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
    # The endpoint is immutable: a Conversation an earlier run made with another one is replaced.
    # Its finalizer would delete its history at that endpoint, which this cluster never reached
    # (or a local server that keeps no other data): the annotation releases it without trying.
    was=$(kubectl get conversations.parley.dev "$name" -o go-template='{{.spec.history.objectStore.endpoint}}' 2>/dev/null || true)
    if [ -n "$was" ] && [ "$was" != "http://$addr" ]; then
      echo "Conversation $name has the object store endpoint $was from an earlier run: replacing it"
      kubectl annotate conversations.parley.dev "$name" parley.dev/skip-history-cleanup=true --overwrite >/dev/null
      kubectl delete conversations.parley.dev "$name" --wait --timeout 60s
    fi
    cat >>"$overlay/kustomization.yaml" <<EOF
- target: {group: parley.dev, kind: Conversation, name: $name}
  patch: |-
    - {op: add, path: /spec/history/objectStore/endpoint, value: "http://$addr"}
    - {op: add, path: /spec/history/objectStore/forcePathStyle, value: true}
    - {op: add, path: /spec/history/objectStore/insecure, value: true}
EOF
    echo "$name: history in bucket $bucket of versitygw at http://$addr, credentials in Secret $secret"
  done <<<"$samples"
}
