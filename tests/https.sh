#!/usr/bin/env bash
# HTTPS in the client (issue 46, item 1): nginx terminating TLS in front of
# `examples/everything --http`, with a CA and certificates this script makes
# with openssl, reached by `mcp-stdio --url https://...` (built with the
# `https` feature) in both eras:
#
#   - info, a tool call, progress (3 notifications) and a listen that
#     hears a tool-list change, with the CA given by --cacert; a call with
#     the CA given by SSL_CERT_FILE instead, one through an mcpServers
#     entry, one to an IP literal (verified against the certificate's IP
#     address), and one to a server that speaks TLS 1.2 only;
#   - refused, in one line that names the host and what to do: a
#     self-signed certificate without --cacert, a certificate for another
#     host name, and a plain http:// server behind an https:// URL.
#
#   tests/https.sh          install what is missing, run, exit 1 on a failure
#
# Installs nginx and openssl from Debian (apt-get) when they are missing.
# Logs, certificates and the nginx config are in target/https/. `cargo
# test` never needs any of it (tests/it/https.rs does the same with an
# in-process TLS terminator).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=target/https
rm -rf "$OUT"
mkdir -p "$OUT/nginx" "$OUT/tls"

step() { printf '\n== %s\n' "$*" >&2; }

for pair in nginx:nginx-light openssl:openssl; do
    tool=${pair%%:*}
    if ! command -v "$tool" >/dev/null && [ ! -x "/usr/sbin/$tool" ]; then
        step "$tool (Debian package ${pair#*:})"
        apt-get install -y -qq "${pair#*:}" >/dev/null 2>&1 ||
            { apt-get update -qq && apt-get install -y -qq "${pair#*:}" >/dev/null; }
    fi
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

step "examples/everything and mcp-stdio with the https feature"
cargo build --quiet --features https --example everything --bin mcp-stdio
everything=target/debug/examples/everything
cli=target/debug/mcp-stdio

step "a CA, a certificate it signs (localhost, 127.0.0.1), one for another name, a self-signed one"
tls=$OUT/tls
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 2 \
    -subj /CN=mcp-stdio-https-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$tls/server.key" -out "$tls/server.csr" \
    -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$tls/good.ext"
openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
    -out "$tls/good.pem" -days 2 -extfile "$tls/good.ext" 2>/dev/null
printf 'subjectAltName=DNS:elsewhere.invalid\nextendedKeyUsage=serverAuth\n' >"$tls/elsewhere.ext"
openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
    -out "$tls/elsewhere.pem" -days 2 -extfile "$tls/elsewhere.ext" 2>/dev/null
openssl req -x509 -key "$tls/server.key" -out "$tls/self-signed.pem" -days 2 \
    -subj /CN=mcp-stdio-https-self-signed -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
    -addext basicConstraints=critical,CA:FALSE 2>/dev/null

# Free loopback ports: the server, nginx with each certificate.
read -r -a ports <<<"$(python3 -c '
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
')"
backend=${ports[0]}
good=${ports[1]}
elsewhere=${ports[2]}
self_signed=${ports[3]}
tls12=${ports[4]}

pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    { wait; } 2>/dev/null || true
}
trap cleanup EXIT

step "examples/everything on http://127.0.0.1:$backend/mcp"
"$everything" --http "127.0.0.1:$backend" 2>"$OUT/everything.log" &
pids+=($!)

server_block() { # PORT CERT [PROTOCOLS]
    cat <<BLOCK
    server {
        listen 127.0.0.1:$1 ssl;
        ssl_protocols ${3:-TLSv1.2 TLSv1.3};
        ssl_certificate $PWD/$tls/$2;
        ssl_certificate_key $PWD/$tls/server.key;
        location /mcp {
            proxy_pass http://127.0.0.1:$backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host:\$server_port;
            # Event streams go through as they are written.
            proxy_buffering off;
            proxy_read_timeout 120s;
        }
    }
BLOCK
}
cat >"$OUT/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $PWD/$OUT/nginx/nginx.pid;
error_log $PWD/$OUT/nginx/error.log warn;
events { worker_connections 256; }
http {
    # Which port and TLS version served each request, for the checks.
    log_format tls '\$server_port \$ssl_protocol \$request';
    access_log $PWD/$OUT/nginx/access.log tls;
    client_body_temp_path $PWD/$OUT/nginx/body;
    proxy_temp_path $PWD/$OUT/nginx/proxy;
    fastcgi_temp_path $PWD/$OUT/nginx/fastcgi;
    uwsgi_temp_path $PWD/$OUT/nginx/uwsgi;
    scgi_temp_path $PWD/$OUT/nginx/scgi;
$(server_block "$good" good.pem)
$(server_block "$elsewhere" elsewhere.pem)
$(server_block "$self_signed" self-signed.pem)
$(server_block "$tls12" good.pem TLSv1.2)
}
CONF
step "nginx terminating TLS on 127.0.0.1:$good (good), :$elsewhere (another name), :$self_signed (self-signed), :$tls12 (TLS 1.2 only)"
"$NGINX" -p "$PWD/$OUT/nginx" -c "$PWD/$OUT/nginx/nginx.conf" 2>"$OUT/nginx/stderr.log" &
pids+=($!)

for port in "$backend" "$good" "$elsewhere" "$self_signed" "$tls12"; do
    for _ in $(seq 1 100); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
        sleep 0.1
    done
done

failed=0
check() { # NAME OK DETAIL
    if [ "$2" = 0 ]; then echo "PASS  $1: $3"; else echo "FAIL  $1: $3"; failed=1; fi
}
url="https://localhost:$good/mcp"
ca=(--cacert "$tls/ca.pem")

for era in modern legacy; do
    step "through nginx, --era $era"
    got=$(timeout 30 "$cli" info --era "$era" "${ca[@]}" --url "$url" 2>&1 || true)
    ok=1
    [[ "$got" == *everything* ]] && ok=0
    check "$era: info" $ok "$(echo "$got" | head -3 | tr '\n' ';')"

    got=$(timeout 30 "$cli" call echo text=héllo --era "$era" "${ca[@]}" --url "$url" 2>&1 || true)
    ok=1
    [ "$got" = héllo ] && ok=0
    check "$era: call echo" $ok "$got"

    timeout 30 "$cli" call progress steps=3 --json --era "$era" "${ca[@]}" --url "$url" \
        >"$OUT/progress-$era.out" 2>"$OUT/progress-$era.err" || true
    heard=$(grep -c '"progress"' "$OUT/progress-$era.err" || true)
    ok=1
    [ "$heard" = 3 ] && grep -q '"done"' "$OUT/progress-$era.out" && ok=0
    check "$era: progress" $ok "$heard progress notifications; $(tr '\n' ';' <"$OUT/progress-$era.out")"

    # The listen's acknowledgment first, then a change made by another client.
    timeout 30 "$cli" listen --tools --json --era "$era" "${ca[@]}" --url "$url" \
        >"$OUT/listen-$era.out" 2>"$OUT/listen-$era.err" &
    listener=$!
    for _ in $(seq 100); do [ -s "$OUT/listen-$era.out" ] && break; sleep 0.05; done
    # A legacy session hears a list change on its GET stream, which the
    # client opens on a thread of its own once initialized: toggled until
    # heard (each toggle is undone by the next).
    toggles=0
    for _ in $(seq 40); do
        "$cli" call toggle_tool "${ca[@]}" --url "$url" >/dev/null 2>&1
        toggles=$((toggles + 1))
        for _ in $(seq 10); do
            grep -q list_changed "$OUT/listen-$era.out" && break 2
            sleep 0.05
        done
    done
    kill -INT "$listener" 2>/dev/null || true
    wait "$listener" 2>/dev/null || true
    # Left as it was: an odd number of toggles added the tool.
    [ $((toggles % 2)) = 1 ] && "$cli" call toggle_tool "${ca[@]}" --url "$url" >/dev/null 2>&1
    heard=$(grep -c list_changed "$OUT/listen-$era.out" || true)
    ok=1
    [ "$heard" -ge 1 ] && ok=0
    check "$era: listen" $ok "heard $heard tools/list_changed after $toggles toggles; $(head -c 300 "$OUT/listen-$era.out" | tr '\n' ';')"
done

step "the CA from SSL_CERT_FILE, an mcpServers entry, an IP literal, TLS 1.2"
got=$(SSL_CERT_FILE="$tls/ca.pem" timeout 30 "$cli" call echo text=env --url "$url" 2>&1 || true)
ok=1
[ "$got" = env ] && ok=0
check "SSL_CERT_FILE" $ok "$got"

printf '{ "mcpServers": { "remote": { "type": "http", "url": "%s" } } }\n' "$url" >"$OUT/servers.json"
got=$(timeout 30 "$cli" call echo text=config "${ca[@]}" --config "$OUT/servers.json" --server remote 2>&1 || true)
ok=1
[ "$got" = config ] && ok=0
check "mcpServers entry" $ok "$got"

got=$(timeout 30 "$cli" call echo text=ip "${ca[@]}" --url "https://127.0.0.1:$good/mcp" 2>&1 || true)
ok=1
[ "$got" = ip ] && ok=0
check "IP literal" $ok "$got"

got=$(timeout 30 "$cli" call echo text=tls12 "${ca[@]}" --url "https://localhost:$tls12/mcp" 2>&1 || true)
versions=$(awk -v p="$tls12" '$1 == p {print $2}' "$OUT/nginx/access.log" | sort -u | tr '\n' ' ')
ok=1
[ "$got" = tls12 ] && [ "$versions" = "TLSv1.2 " ] && ok=0
check "TLS 1.2 only" $ok "$got, over $versions"

step "refusals, one line each"
refused() { # NAME EXPECTED... -- ARGS
    local name=$1
    shift
    local expected=()
    while [ "$1" != -- ]; do expected+=("$1"); shift; done
    shift
    local got code=0
    got=$(timeout 30 "$cli" info "$@" 2>&1) || code=$?
    local ok=1
    if [ "$code" = 3 ] && [ "$(printf '%s\n' "$got" | wc -l)" = 1 ]; then
        ok=0
        for part in "${expected[@]}"; do [[ "$got" == *"$part"* ]] || ok=1; done
    fi
    check "$name" $ok "exit $code: $got"
}
# No SSL_CERT_FILE: the system's roots, which know no test CA.
unset SSL_CERT_FILE SSL_CERT_DIR
refused "self-signed without --cacert" "not trusted" localhost --cacert -- \
    --url "https://localhost:$self_signed/mcp"
refused "a certificate for another name" "not valid for localhost" elsewhere.invalid -- \
    "${ca[@]}" --url "https://localhost:$elsewhere/mcp"
refused "our CA not given" "not trusted" --cacert -- --url "$url"
refused "plain http behind https://" "http://" 127.0.0.1 -- \
    --url "https://127.0.0.1:$backend/mcp"

[ "$failed" = 0 ] || exit 1
echo "all HTTPS checks passed"
